// Parse an AsyncAPI document with the official parser (@asyncapi/parser): schema validation and its rules.
// Usage: node validate-asyncapi.mjs < document.json. Prints {"parsed": bool, "diagnostics": [...]} as JSON;
// severities are 0 error, 1 warning, 2 information, 3 hint.
import { Parser } from '@asyncapi/parser';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { document, diagnostics } = await new Parser().parse(Buffer.concat(chunks).toString('utf8'));
const report = diagnostics.map((d) => ({ code: d.code, severity: d.severity, message: d.message, path: d.path }));
process.stdout.write(JSON.stringify({ parsed: document !== undefined, diagnostics: report }));
