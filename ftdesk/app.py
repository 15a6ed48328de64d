"""The composition root: settings -> broker -> service -> server; headless or with the tray.

This is the only module that imports concrete brokers, the server and the GUI. ``run_headless`` never
imports Qt (the GUI is imported only on the tray path), so the whole service runs on a machine without a
display.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

from keyring.backend import KeyringBackend

from ftdesk import __version__
from ftdesk.autostart import LoginItem, login_item_for_platform
from ftdesk.brokers.base import Broker
from ftdesk.brokers.paper.broker import PaperBroker, paper_db_path, reset_world
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.cli.dispatch import SUBCOMMANDS, run_subcommand
from ftdesk.config import SETTINGS, ConfigError, Settings, load_settings
from ftdesk.data_dir import DataDirDamaged, DataDirSpace, secure_data_dir, tightened_message
from ftdesk.domain.clock import Clock, SystemClock
from ftdesk.domain.session import SessionState
from ftdesk.handoff import hand_off_to_running_instance, instance_running
from ftdesk.logs import SecretRedactor, configure_logging, log_dir
from ftdesk.service import runtime_parts as parts
from ftdesk.service.context import DesktopWindow, ServiceContext
from ftdesk.service.control import ServiceControl, ServiceNotRunning
from ftdesk.service.credentials import CredentialStore
from ftdesk.service.first_run import note_headless_start
from ftdesk.service.keys import ApiKeyStore, SecretVault
from ftdesk.service.orders.approvals import ApprovalBook
from ftdesk.service.orders.desk import OrderDesk
from ftdesk.service.orders.journal import JOURNAL_FILE_NAME, start_new_journal
from ftdesk.service.orders.previews import PreviewBook
from ftdesk.service.orders.recorder import PlacesInFlight
from ftdesk.service.push.responses import StreamRegistry
from ftdesk.service.push.state import StreamingOptions
from ftdesk.service.routes import route_tables
from ftdesk.service.safety.sweep import KillSwitch, RestartSweep
from ftdesk.service.switches import LiveTradingSwitch, SettingsHolder
from ftdesk.service.web.app import create_web_app
from ftdesk.service.web.routing import RouteTable
from ftdesk.service.web.server import PortInUseError, ServiceServer
from ftdesk.streaming.event_hub import AccountEventHub, first_event_id
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.tap import HubQuoteTap

if TYPE_CHECKING:
    from aiohttp import web

    from ftdesk.brokers.fidelity.broker import FidelityBroker

log = logging.getLogger("ftdesk")


def system_keyring() -> KeyringBackend | None:
    """Return the OS keychain backend keyring selects, or None when it cannot be loaded."""
    try:
        import keyring

        backend: KeyringBackend = keyring.get_keyring()
    except Exception:  # a broken keyring installation must not stop the service
        return None
    return backend


def build_broker(settings: Settings, clock: Clock, on_damaged: Callable[[str], None] | None = None) -> Broker:
    """Return the brokerage the settings select; raise ``ConfigError`` for one this build lacks.

    ``on_damaged`` hears, in one line, of a damaged file the broker moved aside (the paper world).
    """
    if settings.broker == "paper":
        config = PaperConfig(
            db_path=paper_db_path(settings.data_dir),
            seed=settings.paper_seed,
            required_password=settings.paper_password,
            totp_secret=settings.paper_totp_secret,
            session_lifetime=settings.paper_session_lifetime,
            tick_interval=settings.paper_tick_interval,
            on_damaged=on_damaged,
        )
        if settings.paper_market == "fidelity":
            from ftdesk.brokers.paper_on_fidelity.broker import PaperOnFidelityBroker  # see build_fidelity

            # The Fidelity side is built without order entry: nothing in this mode can send an order to Fidelity.
            return PaperOnFidelityBroker(config, build_fidelity(settings, clock, order_entry=False))
        return PaperBroker(config, clock)
    if settings.broker == "fidelity":
        return build_fidelity(settings, clock)
    raise ConfigError(f"FTSERVICE_BROKER={settings.broker!r} is not a broker ftdesk knows; use paper or fidelity")


def build_fidelity(settings: Settings, clock: Clock, *, order_entry: bool = True) -> FidelityBroker:
    """Return the Fidelity brokerage the settings configure (without its orders group unless ``order_entry``)."""
    # Imported here: the Fidelity broker and its clients are about a third of the imports, and a paper start
    # (the default) needs none of them.
    from ftdesk.brokers.fidelity.beps import BepsConfig
    from ftdesk.brokers.fidelity.broker import FidelityBroker
    from ftdesk.brokers.fidelity.config import FidelityConfig

    # BEPS configures itself at each login; the FTSERVICE_BEPS_* variables that are set override it.
    return FidelityBroker(
        FidelityConfig(
            upstream=settings.fidelity_upstream,
            read_rate=settings.fidelity_read_rate,
            read_concurrency=settings.fidelity_read_concurrency,
            read_share=settings.fidelity_read_share,
            read_budget=settings.fidelity_read_budget,
            read_retries=settings.fidelity_read_retries,
            order_rate=settings.fidelity_order_rate,
            login_per_minute=settings.fidelity_logins_per_minute,
        ),
        clock,
        beps=BepsConfig.from_settings(settings),
        fallback_interval=settings.beps_fallback_interval,
        order_entry=order_entry,
    )


def settings_redactor(settings: Settings) -> SecretRedactor:
    """Return a log filter that masks every secret setting."""
    return SecretRedactor(getattr(settings, spec.name) for spec in SETTINGS if spec.secret)


class ServiceRuntime:
    """The running service: one object the headless runner and the tray start and stop alike."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        keyring_backend: KeyringBackend | None = None,
        redactor: SecretRedactor | None = None,
        extra_tables: list[RouteTable] | None = None,
        window: DesktopWindow | None = None,
        streaming: StreamingOptions | None = None,
    ) -> None:
        self.settings_holder = SettingsHolder(settings)
        self.clock = clock or SystemClock()
        self.redactor = redactor or settings_redactor(settings)
        self._keyring_backend = keyring_backend
        self.server: ServiceServer | None = None
        self.context: ServiceContext | None = None
        # What the trader must be told about the data dir (damaged files moved aside), for the tray and /health.
        self.problems: list[str] = list(settings.notices)
        self.broker: Broker = build_broker(settings, self.clock, self.problems.append)
        self.live = LiveTradingSwitch(settings.live_trading)
        self._extra_tables = extra_tables or []
        self._streaming = streaming or StreamingOptions()
        self._window = window
        self._key_store: ApiKeyStore | None = None
        self._resources: contextlib.AsyncExitStack | None = None
        self._sweep: RestartSweep | None = None

    @property
    def settings(self) -> Settings:
        """Return the settings the run serves with now."""
        return self.settings_holder.current

    async def start(self) -> ServiceContext:
        """Load the API key, start the broker, build the app and bind the port (``PortInUseError`` if taken).

        Each part registers its release the moment it is acquired; a start that fails half-way releases
        exactly what it had started, in reverse order, and raises what stopped it.
        """
        async with contextlib.AsyncExitStack() as resources:
            context = await self._acquire(resources)
            self._resources = resources.pop_all()  # success: ``stop`` releases them
        if self.settings.login_at_startup:
            # A refused login is not a failed start: the service runs logged out and says why in the status.
            await context.session.login_with_stored_credentials()
        if self._sweep is not None:  # a run that found a halt cancels the open orders before it answers
            await self._sweep.after_start(context.session.state is SessionState.LOGGED_IN)
        return context

    async def _acquire(self, resources: contextlib.AsyncExitStack) -> ServiceContext:
        """Start the parts in order, each a small context manager on the stack: released in reverse at stop.

        Entered (and started) in this order: journal, broker, session, safety guard, restart sweep, loss watch,
        server, and last the two stream hubs. So at stop the hubs close first (their consumers end, and every
        SSE and WebSocket handler they feed returns by itself, so the server's stop waits on no open stream),
        then the server, the guard's parts, the session, the broker, and last the journal, so an order action in
        flight is still recorded.
        """
        settings, clock, live, holder, broker = self.settings, self.clock, self.live, self.settings_holder, self.broker
        vault = SecretVault(self._keyring_backend)
        key_store = ApiKeyStore(vault, settings.data_dir, settings.api_key)
        # keyring may talk to D-Bus and the fallback touches the disk: keep both off the event loop.
        api_key, key_source = await asyncio.to_thread(key_store.load_or_create)
        self.problems.extend(key_store.notices)
        self.redactor.add(api_key)
        self._key_store = key_store
        credentials = CredentialStore(vault, settings.data_dir, settings.encryption_key)
        space = DataDirSpace(settings.data_dir)  # kept in reserve for outcomes, halts and cancels on a full disk
        recorder = await resources.enter_async_context(parts.order_journal(settings, clock, space))
        await resources.enter_async_context(parts.started_broker(broker))
        session = await resources.enter_async_context(parts.brokerage_session(broker, clock, credentials, holder, live))
        # Built now (what reads quotes needs them), run last (below) so they close first.
        quotes = QuoteHub(
            broker.quote_feed, clock, unsubscribe_delay=settings.unsubscribe_delay, backoff=settings.stream_backoff
        )
        # Ids start at the wall time of this start, so a Last-Event-ID from an earlier run is never taken for one of
        # this run.
        events = AccountEventHub(
            broker.account_events,
            clock,
            backoff=settings.stream_backoff,
            source=broker.name,
            fallback=broker.event_fallback,
            first_id=first_event_id(clock.now()),
        )
        # The class is imported only when a run builds that broker: until then no broker can be one.
        on_fidelity = sys.modules.get("ftdesk.brokers.paper_on_fidelity.broker")
        if on_fidelity is not None and isinstance(broker, on_fidelity.PaperOnFidelityBroker):
            # Paper orders fill on the quotes of the service's one MDDS connection, as they arrive.
            tap = HubQuoteTap(quotes)
            resources.push_async_callback(tap.close)
            broker.attach_live_quotes(tap)
        safety = await resources.enter_async_context(
            parts.safety_guard(settings, recorder, clock, holder, session, quotes, self.problems, space, events)
        )
        resources.callback(live.add_listener(safety.live_changed))  # every switch of live trading is audited
        in_flight = PlacesInFlight()
        kill_switch = KillSwitch(safety, live, session, recorder, in_flight)
        self._sweep = await resources.enter_async_context(parts.restart_sweep(safety, kill_switch, session))
        approvals = ApprovalBook(clock)  # the tray attaches to it through the control surface
        orders = OrderDesk(
            recorder, PreviewBook(clock), safety, kill_switch, live, session, in_flight, holder, approvals
        )
        await resources.enter_async_context(parts.loss_watch(safety, kill_switch, clock))
        context = ServiceContext(
            settings_holder=holder,
            api_key=api_key,
            key_source=key_source,
            clock=clock,
            version=__version__,
            broker=broker,
            live=live,
            session=session,
            credentials=credentials,
            streams=StreamRegistry(),
            started_monotonic=clock.monotonic(),
            orders=orders,
            quotes=quotes,
            events=events,
            safety=safety,
            kill_switch=kill_switch,
        )
        app = create_web_app(
            context, route_tables() + self._extra_tables, streaming=self._streaming, window=self._window
        )
        self.server = await resources.enter_async_context(self._serving(app))
        await resources.enter_async_context(parts.following_session(quotes, session))
        await resources.enter_async_context(parts.following_session(events, session))
        self.context = context
        return context

    @contextlib.asynccontextmanager
    async def _serving(self, app: web.Application) -> AsyncIterator[ServiceServer]:
        """Bind the port and serve the app (``PortInUseError`` if taken); stop serving on the way out."""
        server = ServiceServer(app, self.settings.host, self.settings.port)
        await server.start()  # a refused bind has released the socket itself
        try:
            yield server
        finally:
            self.server = None
            await server.stop()

    async def regenerate_api_key(self) -> None:
        """Store a new API key (off the loop); it takes effect when the service next starts."""
        if self._key_store is None:
            raise ServiceNotRunning()
        key, _source = await asyncio.to_thread(self._key_store.regenerate)
        self.redactor.add(key)

    @property
    def url(self) -> str:
        """Return the base URL of the running service."""
        if self.server is None:
            return self.settings.base_url
        return self.server.url

    async def stop(self) -> None:
        """Close the streams, stop the server and release everything start acquired; idempotent."""
        resources, self._resources = self._resources, None
        if resources is not None:
            await resources.aclose()


def _install_stop_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for signame in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, signame, None)
        if sig is None:
            continue
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows: no add_signal_handler
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))


async def serve_until_stopped(settings: Settings, redactor: SecretRedactor) -> int:
    """Serve until SIGINT or SIGTERM, then shut down cleanly; return the exit code."""
    stop = asyncio.Event()
    _install_stop_signals(asyncio.get_running_loop(), stop)
    backend = await asyncio.to_thread(system_keyring)
    control = ServiceControl(
        settings,
        lambda current, window: ServiceRuntime(current, keyring_backend=backend, redactor=redactor, window=window),
        redactor=redactor,
    )
    try:
        await control.start()
    except ConfigError as exc:
        print(f"ftdesk: configuration error: {exc}", file=sys.stderr, flush=True)
        return 2
    except PortInUseError as exc:
        print(f"ftdesk: {exc}", file=sys.stderr, flush=True)
        return 1
    except DataDirDamaged as exc:
        say_damaged(exc)
        return DAMAGED_EXIT
    # The switch as the run holds it, not the setting: a run that came back halted has live trading off.
    halted = control.safety().halt.halted
    mode = "LIVE TRADING" if control.status().live else "dry-run" + (", HALTED" if halted else "")
    print(
        f"ftdesk {__version__} serving {control.url}/api/v1 (broker: {settings.broker}, {mode}); "
        f"docs: {control.url}/docs",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        log.info("Shutting down")
        await control.stop()
    return 0


DAMAGED_EXIT = 3
"""Exit code of a start refused because a file ftdesk cannot run without is damaged (the journal)."""


def say_damaged(exc: DataDirDamaged) -> None:
    """Tell of a refused start in one line: the log (stderr and the log file), or stderr when the log is quiet."""
    if log.isEnabledFor(logging.ERROR):
        log.error("%s", exc)
    else:
        print(f"ftdesk: {exc}", file=sys.stderr, flush=True)


def new_journal(settings: Settings) -> int:
    """Start a new order journal after a damaged one (refused while ftdesk runs); the damaged copy is kept."""
    if asyncio.run(instance_running(settings)):
        print(f"ftdesk: ftdesk is running at {settings.base_url}; quit it first", file=sys.stderr)
        return 1
    print(start_new_journal(settings.data_dir / JOURNAL_FILE_NAME))
    return 0


def freeze_imported_objects() -> None:
    """Keep what importing made (modules, classes, schemas) out of every later full garbage collection.

    Those ~70k objects live as long as the process, so scanning them finds nothing, yet a full collection
    over them stops the event loop for ~30 ms (with them frozen: ~4 ms; bench/gc_pause.py). Only what
    exists before the service is built is frozen, so the objects of a service restart stay collectable.

    Only the young generations are collected first: the imports' garbage is collected as they go, and what
    the last imports left behind is young. A full collection at this point found at most a handful of objects
    (0-5 of ~70k) yet took 45 ms of every start; a test keeps what is frozen for nothing to tens of objects.
    """
    gc.collect(1)
    gc.freeze()


def run_headless(settings: Settings, redactor: SecretRedactor) -> int:
    """Run the service on a plain asyncio loop (no Qt import) until a stop signal."""
    try:
        note_headless_start(settings.data_dir)  # before serving: serving creates the journal
    except OSError as exc:  # the welcome is a courtesy: a data dir that refuses the mark must not stop the service
        log.warning("Could not note the first start in %s: %s", settings.data_dir, exc.strerror or exc)
    freeze_imported_objects()
    return asyncio.run(serve_until_stopped(settings, redactor))


def print_api_key(settings: Settings) -> int:
    """Print the API key (creating it on first use) for scripts."""
    store = ApiKeyStore(SecretVault(system_keyring()), settings.data_dir, settings.api_key)
    key, _source = store.load_or_create()
    print(key)
    return 0


def reset_paper(settings: Settings) -> int:
    """Delete the paper world so the next start creates a fresh one (refused while ftdesk runs)."""
    if asyncio.run(instance_running(settings)):
        print(
            f"ftdesk: ftdesk is running at {settings.base_url}; quit it before resetting the paper world",
            file=sys.stderr,
        )
        return 1
    db_path = paper_db_path(settings.data_dir)
    removed = reset_world(db_path)
    if removed:
        print(f"Paper world reset: removed {db_path}; the next start creates a fresh one")
    else:
        print(f"No paper world at {db_path}; the next start creates a fresh one")
    return 0


def gui_unavailable() -> str | None:
    """Return why Qt could not open the desktop here (it would abort the process), or None when it can."""
    from ftdesk.gui.platform_probe import probe_gui  # imports no Qt: it decides whether Qt may be loaded

    problem = probe_gui()
    return None if problem is None else problem.message()


def run_tray(settings: Settings, redactor: SecretRedactor) -> int:
    """Run the tray app and the service on one qasync loop; hand off to a running instance instead if any.

    Where Qt cannot open the desktop (no display, or a library its platform plugin needs is missing), say
    what is missing once (stderr and the log) and serve headless instead of letting Qt abort the process.
    """
    backend = system_keyring()
    handed = asyncio.run(hand_off_to_running_instance(settings, backend))
    if handed is not None:
        print(handed.message if handed.ok else f"ftdesk: {handed.message}", file=None if handed.ok else sys.stderr)
        return 0 if handed.ok else 1
    reason = gui_unavailable()
    if reason is not None:
        log.warning("%s", reason)  # the log goes to stderr and the log file
        if not log.isEnabledFor(logging.WARNING):
            print(f"ftdesk: {reason}", file=sys.stderr, flush=True)
        return run_headless(settings, redactor)
    from ftdesk.gui.application import run_gui

    freeze_imported_objects()

    def make_runtime(current: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(current, keyring_backend=backend, redactor=redactor, window=window)

    control = ServiceControl(settings, make_runtime, reload_settings=load_settings, redactor=redactor)
    return run_gui(control, install_stop_signals=_install_stop_signals, login_item=login_item_for_platform())


HELP_EPILOG = """\
Settings come from FTSERVICE_* environment variables and settings.json in the
data dir (see the README).

Subcommands talk to the running service (ftdesk SUBCOMMAND --help; docs/cli.md):
  quote, positions, balances, orders, chain, status, stream   read (--json for scripts)
  buy, sell, short, cover, cancel                             trade: each order previews first, then asks
  login, logout                                               the brokerage session (the password is asked)
  halt, resume                                                the kill switch
  mcp                                                         serve an AI assistant (docs/assistant.md)
"""
"""The help's closing lines, written out by hand so no subcommand's name is broken across lines."""


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ftdesk",
        description="Your brokerage account behind a local REST, SSE and WebSocket API on 127.0.0.1:8787.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--headless", action="store_true", help="serve the API without the tray (no display needed)")
    parser.add_argument("--print-api-key", action="store_true", help="print the API key and exit")
    parser.add_argument(
        "--reset-paper", action="store_true", help="delete the paper world (accounts, orders, notes) and exit"
    )
    parser.add_argument(
        "--new-journal",
        action="store_true",
        help="start a new order journal after ftdesk found the old one damaged (the damaged copy is kept), and exit",
    )
    parser.add_argument(
        "--autostart",
        choices=("on", "off", "status"),
        help="start ftdesk at login (on), stop doing so (off), or say which (status), then exit",
    )
    parser.add_argument("--version", action="version", version=f"ftdesk {__version__}")
    return parser.parse_args(argv)


def set_autostart(choice: str, login_item: LoginItem | None) -> int:
    """Turn starting at login on or off, or report it; return the exit code."""
    if login_item is None:
        print(f"ftdesk: starting at login is not supported on {sys.platform}", file=sys.stderr)
        return 1
    try:
        if choice == "on":
            login_item.enable()
        elif choice == "off":
            login_item.disable()
    except OSError as exc:
        print(f"ftdesk: could not change {login_item.location}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    state = "on" if login_item.is_enabled() else "off"
    print(f"Start at login: {state} ({login_item.location})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Start ftdesk from the command line; return the process exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in SUBCOMMANDS:  # a console script installed before ftdesk.cli.entry became the entry
        return run_subcommand(given)
    args = _parse_args(given)
    if args.autostart:
        return set_autostart(args.autostart, login_item_for_platform())
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"ftdesk: configuration error: {exc}", file=sys.stderr)
        return 2
    # The data dir holds a trader's orders and credentials: the user's alone. Each file is created private;
    # older installs are tightened here, and the log says so once it exists. (Not a process umask: programs
    # the tray opens, a browser or a file manager, would inherit it.)
    tightened = secure_data_dir(settings.data_dir)
    if args.print_api_key:
        return print_api_key(settings)
    if args.reset_paper:
        return reset_paper(settings)
    if args.new_journal:
        return new_journal(settings)
    redactor = settings_redactor(settings)
    configure_logging(settings.log_level, log_dir(settings.data_dir), redactor)
    for notice in settings.notices:  # a damaged settings file, moved aside: one line on stderr and in the log file
        log.error("%s", notice)
    if tightened:
        log.info("%s", tightened_message(settings.data_dir, tightened))
    if not args.headless:
        return run_tray(settings, redactor)
    return run_headless(settings, redactor)


if __name__ == "__main__":
    sys.exit(main())
