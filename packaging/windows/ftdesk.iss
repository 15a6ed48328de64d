; Inno Setup script for ftdesk on Windows: a per-user install (no administrator rights), a Start-menu
; entry, and optional start at login.
;
; Build the app first, then compile this script (packaging/build.py does both where iscc is on PATH):
;   python packaging\build.py
;   iscc /DAppVersion=0.1.0 packaging\windows\ftdesk.iss
; The result is dist\ftdesk-<version>-windows-setup.exe.
;
; "Start ftdesk when I log in" writes the value "ftdesk" under HKCU\...\CurrentVersion\Run: the same value
; ftdesk's Settings dialog and "ftdesk --autostart on|off" write, so all three agree on one switch.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{5B0E3A7C-2F4D-4C9B-9A61-3E8D2C7F1A45}
AppName=ftdesk
AppVersion={#AppVersion}
AppVerName=ftdesk {#AppVersion}
AppPublisher=ftdesk
AppComments=Your brokerage account behind a local REST, SSE and WebSocket API, from the system tray
; Per user: no UAC prompt; installs under %LOCALAPPDATA%\Programs\ftdesk.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
DefaultDirName={autopf}\ftdesk
DefaultGroupName=ftdesk
DisableProgramGroupPage=yes
OutputDir=..\..\dist
OutputBaseFilename=ftdesk-{#AppVersion}-windows-setup
SetupIconFile=..\..\resources\icons\ftdesk.ico
UninstallDisplayIcon={app}\ftdesk.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
; ftdesk may be running (it lives in the tray): close it before replacing or removing its files.
CloseApplications=yes
RestartApplications=no

[Tasks]
Name: "autostart"; Description: "Start ftdesk when I log in"; GroupDescription: "Start-up:"; Flags: unchecked
Name: "desktopicon"; Description: "Create a desktop shortcut"; GroupDescription: "Shortcuts:"; Flags: unchecked

[Files]
Source: "..\..\dist\ftdesk\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\ftdesk"; Filename: "{app}\ftdesk.exe"; Comment: "ftdesk: your brokerage account behind a local API"
Name: "{autodesktop}\ftdesk"; Filename: "{app}\ftdesk.exe"; Tasks: desktopicon

[Registry]
Root: HKCU; Subkey: "Software\Microsoft\Windows\CurrentVersion\Run"; ValueType: string; ValueName: "ftdesk"; \
    ValueData: """{app}\ftdesk.exe"""; Tasks: autostart; Flags: uninsdeletevalue

[Run]
Filename: "{app}\ftdesk.exe"; Description: "Start ftdesk now"; Flags: nowait postinstall skipifsilent

[UninstallRun]
; Also removes a login entry turned on later from ftdesk's Settings dialog.
Filename: "{app}\ftdesk.exe"; Parameters: "--autostart off"; Flags: runhidden waituntilterminated; RunOnceId: "autostart-off"

; The trader's settings, paper world, order journal and logs live in %LOCALAPPDATA%\ftdesk, outside {app}:
; uninstalling keeps them (delete that folder to remove them too).
