//! The risky actions as data: named regular expressions per action class, the word lists they
//! share, and the exceptions that spare a match ("cp .env.example .env", "cat id_ed25519.pub").
//! The cues around a match (negations, verdicts, frames) are in `cues.rs`.
//!
//! To add a rule, add one `(class, pattern)` entry to `RULES`; the class must be one of
//! `CLASSES`, whose description is what a held experience's reason says. Patterns run on the
//! matching view of `super::view` (folded, lowercased, backticks and quotes taken out, line
//! continuations joined), so they are written in lowercase ASCII (and Chinese) and need no
//! `(?i)`. `{NAME}` stands for one of `WORD_LISTS`.

/// Every action class, with the words a held experience's reason uses for it.
pub(super) const CLASSES: &[(&str, &str)] = &[
    ("pipe_to_shell", "pipes a download into a shell"),
    ("credential_read", "reads a credential file"),
    ("tls_off", "turns off TLS verification"),
    ("exfiltration", "sends data off the machine"),
    ("destructive", "runs a destructive command"),
];

/// Expands `{NAME}` tokens to their word lists.
pub(super) fn expand(pattern: &str) -> String {
    let mut expanded = pattern.to_owned();
    for (token, words) in WORD_LISTS {
        expanded = expanded.replace(token, words);
    }
    expanded
}

const WORD_LISTS: &[(&str, &str)] = &[
    ("{FETCH}", FETCH),
    ("{PREFIX}", PREFIX),
    ("{SHELL}", SHELL),
    ("{INTERPRETER}", INTERPRETER),
    ("{CRED}", CRED),
    ("{READ}", READ),
    ("{ZH_READ}", ZH_READ),
    ("{END}", END),
    ("{ROOTS}", ROOTS),
    ("{HOME}", HOME),
    ("{ENV_DUMP}", ENV_DUMP),
    ("{SENDER}", SENDER),
    ("{SENSITIVE}", SENSITIVE),
    ("{DATA_DIRS}", super::target_rules::DATA_DIRS),
];

/// Commands and forms that fetch something from the network.
const FETCH: &str = r"(?:\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)\b|https?://)";
/// What may stand before a command: `sudo` with options, `env`, variable assignments, a path.
const PREFIX: &str = r"(?:(?:sudo(?: +-[a-z-]+(?: +[a-z0-9_]+)?)*|doas|env(?: +-[a-z]+)*|[a-z_][a-z0-9_]*=(?:'[^'\n]*'|\x22[^\x22\n]*\x22|\S*)|/(?:usr/)?(?:local/)?bin/) +)*(?:/(?:usr/)?(?:local/)?bin/)?";
/// Shells, which run whatever they are given.
const SHELL: &str = r"(?:(?:ba|z|da|k|c|tc|fi|a)?sh|iex|invoke-expression|pwsh|powershell)\b";
/// Interpreters, which run their standard input only without a script or `-m`/`-c`.
/// `py` is Windows' launcher; `python3 - --version 1.2` passes arguments to the script it reads.
const INTERPRETER: &str =
    r"(?:python[0-9.]*|py|perl|ruby|node|php)(?: +-(?:$|[\s;&)|\\\x22'])| *(?:$|[;&)|\n\\\x22'，。,])| +[^\x00-\x7f])";
/// A home directory however a shell or Windows spells it: `~`, `$HOME`, `${HOME}`, `"$HOME"`,
/// `$env:USERPROFILE`, `%USERPROFILE%`.
const HOME: &str = r#"(?:~|["']?(?:\$home|\$\{home\}|\$env:userprofile|\$env:home|%userprofile%|%homepath%)["']?)"#;
/// Files and stores that hold credentials, with `/` or `\` between the parts. `.env` only as a
/// file name of its own (not `process.env`, not `.env.example`).
const CRED: &str = concat!(
    r"(?:(?:^|[^\w])\.env(?:\.(?:local|production|prod|development|dev|staging|test))?(?:$|[^\w.\-/\\])",
    r"|\.aws[/\\](?:credentials|config)\b|{HOME}[/\\]\.aws\b",
    r"|\.ssh[/\\](?:id_[a-z0-9_*]+(?:\.pub\b)?|identity|\*)|{HOME}[/\\]\.ssh(?:[/\\])?(?:$|[\s;&|),])|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?:\.pub\b)?",
    r"|\.netrc(?:$|[^\w(])|\.pgpass\b|\.git-credentials\b|\.docker[/\\]config\.json|\.kube/config\b|/etc/shadow\b",
    r"|\.npmrc\b|\.pypirc\b|\.config/gcloud\b|(?:/root|/home/[a-z0-9_-]+)/\.ssh/?(?:$|[\s;&|)])|\.gnupg\b|\.password-store\b|\.keychain(?:-db)?\b|\bkeychains?\b|钥匙串",
    // Browsers' saved passwords and cookies.
    r"|\blogin\\? ?data\b|\blogins\.json\b|\bkey4\.db\b|/(?:chrome|chromium|edge|brave)/[a-z0-9 ._-]{0,30}/cookies\b",
    // Tokens of common command lines.
    r"|/proc/(?:self|\d+|\$\$)/environ\b|\.config/gh/hosts\.yml\b|\.cargo/credentials\b|\bcredentials\.tfrc\.json\b|\.azure/accesstokens\.json\b)",
);
/// Verbs that read, copy or send a file's contents, in POSIX shells, PowerShell and cmd, and in
/// words. `more` and `less` only where a command stands ("one or more .env files" is prose).
const READ: &str = concat!(
    r"(?:\b(?:cat|cats|head|tail|bat|strings|xxd|hexdump|od|base64|get-content|gc|type|select-string|sls|copy-item|cpi",
    r"|print|printf|dump|echo|pbcopy|xclip|xsel|clip|read|copy|cp|scp|rsync|upload|send|post|paste|exfiltrate",
    r"|share|attach|grep|findstr|tar|zip|mail|nc|ncat|curl|wget|reveal|leak|transmit|forward|submit|kb_submit",
    r"|output|contents? of|sqlite3|readfilesync|readfile|read_to_string|read_text|read_bytes|file_get_contents|slurp)\b|(?:(?m:^)|[;&|(]|\$) *(?:more|less)\b)",
);
const ZH_READ: &str =
    r"(?:读取|读出|读一下|查看|打开|输出|打印|显示|复制|拷贝|上传|发送|发到|发给|贴到|粘贴|提交|打包|内容)";
/// The end of a command-line word.
const END: &str = r#"(?:$|[\s;&|"')])"#;
/// Targets whose recursive removal destroys a system or a home directory: the root, a system
/// directory, a home however spelt, a Windows drive, each quoted or not, with a trailing `/`,
/// `/*` or `/.*` (`"$HOME"/`, `~/*`, `'/'`, `C:\`), up to the end of the word.
const ROOTS: &str = concat!(
    r#"["']?(?:/|{HOME}|/home|/users|/root|/etc|/usr|/var|/boot|/bin|/lib|/opt|[a-z]:(?:\\users|\\windows)?|/var/lib/(?:postgresql|pgsql|mysql|mongodb|redis|docker|etcd))"#,
    r#"["']?[/\\]{0,2}["']?(?:\.?\*)?["']?(?:$|[\s;&|)])"#,
);
/// Commands that dump the environment or the shell's history.
const ENV_DUMP: &str =
    r"(?:\b(?:env|printenv|history|set|export -p|declare -x|compgen -v)|\b(?:get-childitem|gci|dir|ls) +env:)";
/// Commands that send data over the network.
const SENDER: &str =
    r"\b(?:curl|wget|nc|ncat|netcat|socat|scp|rsync|iwr|irm|invoke-webrequest|invoke-restmethod|http|https|xh)\b";

/// What in a file's name says it holds data that must not leave: a dump, production or customer
/// data, secrets, a shell's history, keys, a backup.
const SENSITIVE: &str = r"(?:dump|\.sql\b|\bprod|secret|passwd|shadow|customer|users|credential|token|\.env\b|_history|private|\.pem\b|\.key\b|\.kdbx\b|backup)";

/// Every rule with its class.
pub(super) const RULES: &[(&str, &str)] = &[
    // A download piped into a shell or an interpreter, within one pipeline.
    ("pipe_to_shell", r"{FETCH}[^\n;&]*\| *{PREFIX}(?:{SHELL}|{INTERPRETER})"),
    // `bash <(curl …)`, `sh -c "$(curl …)"`, `source <(wget …)`, `eval "$(curl …)"`.
    (
        "pipe_to_shell",
        r"(?:(?:^|[^.])\b(?:{SHELL}|python[0-9.]*|perl|ruby|node|eval|source|exec)|(?:^|[\s;&])\.)[^\n(]{0,20}(?:<\(|\$\() *{PREFIX}(?:curl|wget|fetch|iwr|irm)\b",
    ),
    // PowerShell: `iex (iwr …)`, `iwr … | iex`, `(New-Object Net.WebClient).DownloadString(…) | iex`.
    (
        "pipe_to_shell",
        r"\b(?:iex|invoke-expression)\b[^\n]{0,10}\(+ *(?:iwr|irm|invoke-webrequest|invoke-restmethod|new-object +(?:system\.)?net\.webclient)",
    ),
    ("pipe_to_shell", r"\b(?:downloadstring|downloadfile)\b[^\n]*\| *(?:iex|invoke-expression)\b"),
    ("pipe_to_shell", r"\b(?:iex|invoke-expression)\b[^\n]{0,40}\bdownloadstring\b"),
    // A script downloaded and then run: `curl -o x.sh URL && sh x.sh`, `wget URL/fix.sh; chmod +x fix.sh; ./fix.sh`
    // (by a downloader: `git clone https://… && ./build.sh` runs a checkout).
    (
        "pipe_to_shell",
        r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)\b[^\n]*?\.(?:sh|bash|ps1)\b[^\n]*?(?:&&|;|\n) *(?:chmod +\+x +\S+ *(?:&&|;|\n) *)?{PREFIX}(?:(?:ba|z)?sh +|\./|pwsh +|powershell +)\S*\.(?:sh|bash|ps1)\b",
    ),
    // Decoded text run: `echo … | base64 -d | sh`, `xxd -r -p | bash`, `$(echo … | base64 -d)`.
    (
        "pipe_to_shell",
        r"\b(?:base64 +(?:-d|--decode|-di)|xxd +-r(?: +-p)?|openssl +(?:base64|enc) +[^\n|]*-d)\b[^\n;&|]*\| *{PREFIX}{SHELL}",
    ),
    ("pipe_to_shell", r"\$\([^()\n]*\| *base64 +(?:-d|--decode|-di)\b[^()\n]*\)"),
    // In words: pipe or feed it into a shell; download a script and run it unread.
    (
        "pipe_to_shell",
        r"\b(?:pipe|pipes|piping|piped|feed|feeding|curl|wget)\b[^\n.;]{0,60}\b(?:in)?to +(?:sudo +)?(?:(?:ba|z)?sh\b|(?:a |the )?(?:root )?shell\b)",
    ),
    (
        "pipe_to_shell",
        r"\b(?:run|execute|exec|source|launch)\b[^\n.;]{0,60}(?:https?://\S+|\bscript\b|\.sh\b|\binstaller\b)[^\n.;]{0,40}(?:without (?:reading|reviewing|checking|looking|inspecting|verifying)|no need to (?:review|read|check|inspect|look)|blindly)",
    ),
    ("pipe_to_shell", r"\b(?:run|execute|exec)\b[^\n.;]{0,60}https?://\S+[^\n.;]{0,40}\b(?:as root|with sudo)\b"),
    (
        "pipe_to_shell",
        r"管道[^\n。；]{0,6}(?:给|到|进|交给|传给|输入)[^\n。；]{0,6}(?:sudo ?)?(?:(?:ba|z)?sh|shell|终端)",
    ),
    (
        "pipe_to_shell",
        r"(?:下载|获取|拉取|curl|wget)[^\n。；]{0,40}(?:脚本|\.sh|安装程序)[^\n。；]{0,30}(?:直接|然后|再|并|后)[^\n。；]{0,6}(?:执行|运行|交给 ?(?:ba)?sh)",
    ),
    (
        "pipe_to_shell",
        r"(?:执行|运行)[^\n。；]{0,40}(?:https?://|脚本)[^\n。；]{0,30}(?:不用|无需|不需要|没必要|不必)(?:检查|审查|看|阅读|查看|审核)",
    ),
    // Credential files read, copied or sent, and keychains dumped.
    ("credential_read", r"{READ}[^\n;]{0,30}?{CRED}"),
    ("credential_read", r"/etc/shadow\b"),
    // The same with a long path of one word, spaces escaped (`cp ~/Library/…/Login\ Data`).
    ("credential_read", r#"{READ}(?: +-\S+)* +["']?(?:[^\s;|&"']|\\ )*{CRED}"#),
    ("credential_read", r"{ZH_READ}[^\n。；]{0,20}?{CRED}"),
    (
        "credential_read",
        r"{CRED}[^\n。；不别勿]{0,10}?(?:的内容|内容|发到|发给|发他|发她|发群|发送|上传|贴到|打包|拷出)",
    ),
    // A key file pasted where people read it: "open ~/.ssh/id_ed25519 and paste the key into the chat".
    (
        "credential_read",
        r"{CRED}[^\n.;]{0,60}\b(?:paste|post|send|share|copy|put)\b[^\n.;]{0,30}\b(?:chat|channel|thread|ticket|reply|slack|group|wiki|issue)\b",
    ),
    ("credential_read", r"\bsecurity +(?:find-generic-password|find-internet-password|dump-keychain)\b"),
    ("credential_read", r"\bsecret-tool +lookup\b"),
    // Password managers' command lines printing a secret into whatever reads the output (an
    // agent's transcript): `keyring get SERVICE USER`, `pass show`, `lpass show --password`,
    // `bw get password`, `op read op://…`, `op item get … --reveal`.
    (
        "credential_read",
        r"\bkeyring +get +\S+ +\S+|\bpass +show +\S|\blpass +show\b[^\n]*--password\b|\bbw +get +password\b|\bop +read +[\x22']?op://|\bop +item +get\b[^\n]*--reveal\b",
    ),
    (
        "credential_read",
        r"\b(?:read|dump|export|extract|print|get|copy)\b[^\n.;]{0,30}\b(?:keychain|credential manager|password store|saved passwords)\b",
    ),
    // TLS verification turned off, as flags, settings and environment variables.
    ("tls_off", r"\bcurl\b[^\n|;&]*?[ \[](?:-[a-z]*k[a-z]*|--insecure)(?:$|[\s;&|\],.，。])"),
    (
        "tls_off",
        r"(?:^|[\s\[|])(?:--insecure|-insecure|--no-check-certificates?|--insecure-skip-tls-verify|--no-verify-ssl|--trusted-host|--disable-tls-verification)(?:$|[\s=;&|\],.，。])",
    ),
    ("tls_off", r"\bverify *= *false\b|\bverify_ssl *[=:] *false\b|\bssl_?verify *[=:]? *(?:false|0|none)\b"),
    // Command-line switches of other clients: httpie `--verify=no`, PowerShell
    // `-SkipCertificateCheck`, podman/skopeo `--tls-verify=false`, `--skip-tls-verify`.
    (
        "tls_off",
        r"(?:^|[\s\[])(?:--verify[= ](?:no|false|0|off)|-skipcertificatecheck|--(?:src-|dest-)?(?:tls|ssl)-?verify[= ](?:false|no|0|off)|--(?:skip-tls-verify|tls-skip-verify|insecure-skip-verify|disable-ssl-verification|ssl-no-verify))(?:$|[\s;&|\],.，。])",
    ),
    // Settings of libraries and tools: .NET validation callbacks that accept all, Java trust-all
    // managers, Ruby `VERIFY_NONE`, reqwest `danger_accept_invalid_certs`, Ansible
    // `validate_certs: no`, `.wgetrc`, an empty `CURL_CA_BUNDLE` (requests then verifies nothing).
    (
        "tls_off",
        r"\b(?:servercertificate(?:custom)?validationcallback|remotecertificatevalidationcallback)\b[^\n]{0,40}(?:\{ *\$?true *\}|=> *true\b|return +true\b)|\bdangerousacceptanyservercertificatevalidator\b",
    ),
    (
        "tls_off",
        r"\btrust_?all_?(?:certs|certificates|trustmanager)\b|\btrustallcerts\b|\bnoophostnameverifier\b|\ballow_all_hostname_verifier\b|\binsecuretrustmanagerfactory\b|\bverify_none\b",
    ),
    (
        "tls_off",
        r#"\bdanger_accept_invalid_(?:certs|hostnames) *\( *true\b|\bvalidate_certs *[:=] *["']?(?:no|false|0)\b|\bcheck_certificate *= *off\b|\bcurl_ca_bundle *= *(?:""|''|$)"#,
    ),
    ("tls_off", r"\bhttp\.sslverify(?: *=)? *false\b|\bstrict-ssl(?: *=| +)false\b"),
    (
        "tls_off",
        r#"\bnode_tls_reject_unauthorized *[=:] *["']?0\b|\bgit_ssl_no_verify *[=:] *["']?(?:1|true)\b|\bpythonhttpsverify *[=:] *["']?0\b"#,
    ),
    (
        "tls_off",
        r"\brejectunauthorized *[:=] *false\b|\binsecureskipverify *[:=] *true\b|\b(?:insecure_skip_verify|tls_skip_verify|skip_tls_verify) *[=:] *true\b",
    ),
    (
        "tls_off",
        r"\b_create_unverified_context\b|\bcheck_hostname *= *false\b|\bcert_none\b|(?:\b|curlopt_)ssl_verify(?:peer|host) *(?:,|=>|=|:) *(?:false|0)\b",
    ),
    (
        "tls_off",
        r"\b(?:disable|disabling|disabled|turn(?:ing)? off|switch(?:ing)? off|skip(?:ping)?|bypass(?:ing)?|ignor(?:e|ing)|don'?t verify|stop verifying)\b[^\n.;]{0,30}\b(?:tls|ssl|https|certificate|cert)s?\b[^\n.;]{0,20}\b(?:verification|validation|verify|checks?|checking|errors?)\b",
    ),
    ("tls_off", r"\b(?:tls|ssl|certificate|cert) (?:verification|validation|checks?|checking) (?:off|disabled)\b"),
    (
        "tls_off",
        r"(?:关闭|禁用|跳过|忽略|关掉|取消|不做|去掉|绕过)[^\n。；]{0,10}(?:证书|tls|ssl|https)[^\n。；]{0,6}(?:校验|验证|检查|错误)",
    ),
    ("tls_off", r"(?:证书|tls|ssl)(?:校验|验证)[^\n。；]{0,4}(?:关掉|关闭|禁用|去掉)"),
    ("tls_off", r"(?:不|无需|不用|不必)(?:校验|验证|检查)[^\n。；]{0,4}(?:证书|ssl|tls|https)"),
    // Data sent off the machine: the environment or history to a network command, a file by
    // netcat, a TCP device, secrets named in words with a destination.
    (
        "exfiltration",
        r"\b(?:env|printenv|history|set|export -p)\b *\| *(?:base64 *\| *)?(?:curl|wget|nc|ncat|netcat|socat)\b",
    ),
    ("exfiltration", r"\b(?:curl|wget)\b[^\n]*\$\( *(?:env|printenv|history|set|whoami|cat +/etc/passwd)\b"),
    (
        "exfiltration",
        r"{ENV_DUMP} *\| *(?:convertto-json *\| *)?(?:iwr|irm|invoke-webrequest|invoke-restmethod|http|https|xh)\b",
    ),
    // The same through a file: the environment written to a file, then a network command in the
    // same or the next line that sends a file (`env > /tmp/e && curl -F f=@/tmp/e …`).
    (
        "exfiltration",
        r"{ENV_DUMP} *(?:\| *[a-z0-9-]+ *)?(?:>>?|\| *(?:out-file|set-content|tee)\b) *\S+[^\n]*(?:\n[^\n]*)?{SENDER}[^\n]*(?:@|-t +|--upload-file +|--data-binary +@|--(?:post|body)-file[= ]|-infile +|< *)\S",
    ),
    // Code that posts the whole environment: `requests.post(url, json=dict(os.environ))`,
    // `fetch(url, {body: JSON.stringify(process.env)})`.
    (
        "exfiltration",
        r"\b(?:post|put|send|fetch|request|axios|urlopen)\b[^\n]{0,80}(?:\bos\.environ(?:$|[^\[.a-z_])|json\.stringify\( *process\.env *\)|json\.dumps\( *(?:dict\()?os\.environ\b)",
    ),
    ("exfiltration", r"\b(?:nc|ncat|netcat)\b +[^\n|;&]*\S+ +\d{2,5} *< *\S+"),
    ("exfiltration", r"\| *(?:nc|ncat|netcat) +[a-z0-9.-]+\.[a-z]{2,}[a-z0-9.-]* +\d{2,5}\b"),
    ("exfiltration", r"(?:>& *|[^<>]> *)/dev/tcp/|\b(?:nc|ncat|netcat)\b[^\n]* -e +\S+"),
    (
        "exfiltration",
        r"\b(?:send|post|upload|forward|exfiltrate|transmit|paste|submit|email|mail|share|leak)(?:s|ed|ing)?\b[^\n.;]{0,50}\b(?:secrets|credentials|private keys?|ssh keys?|env(?:ironment)? var(?:iable)?s|environment|cookies|\.env)\b[^\n.;]{0,50}\b(?:to|into|at)\b[^\n.;]{0,30}(?:https?://|\bwebhook|\bpastebin|\bgist|\burl\b|\bendpoint\b|\bkb_submit\b|\S+@\S+\.\S+)",
    ),
    (
        "exfiltration",
        r"\bkb_submit\b[^\n.]{0,40}\b(?:secrets?|tokens?|credentials?|api[ _-]?keys?|passwords?|private keys?|env(?:ironment)?(?: var(?:iable)?s)?)\b",
    ),
    (
        "exfiltration",
        r"(?:发送|发到|发给|上传|提交[^前\n]|贴到|传到)[^\n。；,]{0,20}(?:环境变量|私钥|凭据|凭证|密钥|\.env|id_rsa|ssh)",
    ),
    (
        "exfiltration",
        r"(?:环境变量|私钥|凭据|凭证|密钥|\.env|id_rsa)[^\n。；不别勿]{0,20}(?:发送|发到|发给|上传|提交|贴到|传到)",
    ),
    // Round 3 families (README of `tests/data`: round-2 blind misses, each as a family).
    //
    // A download run by any shell or by name: `| source`, `| $(SHELL)`, `| $SHELL`; saved, made
    // executable and run by its path (`-o /tmp/i.sh && chmod +x /tmp/i.sh && /tmp/i.sh`,
    // PowerShell `-OutFile x.ps1; & ./x.ps1`). A downloader, not any URL: `git clone https://…
    // && chmod +x ./build.sh && ./build.sh` builds a checkout.
    (
        "pipe_to_shell",
        r"{FETCH}[^\n;&]*\| *{PREFIX}(?:source|\.|\$\(shell\)|\$\{?shell\}?|\$\{shell:?-[a-z]*\})(?:$|[\s;&|)])",
    ),
    (
        "pipe_to_shell",
        r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)\b[^\n]*?(?:&&|;|\n) *(?:sudo +)?chmod +(?:[0-7]*[1357][0-7]*|[ugoa]*\+[rwx]*x[rwx]*) +\S+ *(?:&&|;|\n) *{PREFIX}(?:\./|/|~/)\S+",
    ),
    // Code that runs what it downloads: `exec(urlopen(…).read())`, `eval(await (await fetch(u)).text())`.
    (
        "pipe_to_shell",
        r"\b(?:exec|eval|instance_eval|invoke-expression|iex)\b *\(+[^\n]{0,40}\b(?:urlopen|urlretrieve|requests\.get|httpx\.get|fetch|net::http\.get|open-uri|uri\.open|downloadstring|iwr|irm|invoke-webrequest|invoke-restmethod)\b|\b(?:exec|eval)\b *\(+ *(?:file_get_contents|open|urlopen)\( *[\x22']https?://",
    ),
    (
        "pipe_to_shell",
        r#"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)\b[^\n]*?\.(?:sh|bash|ps1|run|bin)\b[^\n]{0,80}?(?:&&|;|\n) *(?:chmod +\+?[0-7a-z+]+ +\S+ *(?:&&|;|\n) *)?(?:& *|\. +)?["']?(?:\./|/|~/|[a-z]:\\)\S*\.(?:sh|bash|ps1|run|bin)\b"#,
    ),
    // Windows programs that fetch and run in one go: `mshta https://…`, `msiexec /i https://…`,
    // `regsvr32 /i:https://…`, `certutil -urlcache … && x.exe`.
    (
        "pipe_to_shell",
        r"\bmshta(?:\.exe)? +[\x22']?https?://|\bmsiexec\b[^\n]*/i +[\x22']?https?://|\bregsvr32\b[^\n]*/i:[\x22']?https?://|\bcertutil\b[^\n]*-urlcache\b[^\n]*(?:&&|;|\n|&) *(?:start +)?\S+\.(?:exe|bat|cmd|ps1)\b",
    ),
    // In words: fetch a script, then run it at once or unread ("fetch the setup script from … and
    // run it straight away. Don't bother reading it").
    (
        "pipe_to_shell",
        r"\b(?:fetch|download|grab|get|pull|curl|wget)\b[^\n.;]{0,60}(?:https?://\S+|\bscript\b|\.sh\b|\binstaller\b)[^\n;]{0,40}\b(?:run|execute|exec|source|launch)\b[^\n;]{0,20}(?:straight away|right away|immediately|at once|directly|without (?:reading|reviewing|checking|looking|inspecting|verifying)|blindly|(?:don'?t|do not|no need to) bother (?:reading|checking|reviewing|looking))",
    ),
    (
        "pipe_to_shell",
        r"(?:脚本|\.sh|安装程序)[^\n。；]{0,12}(?:下载|拉取|获取|拉下来)[^\n。；]{0,12}(?:直接|立即|立刻|马上|不经检查|不用看|不用先看)[^\n。；]{0,12}(?:执行|运行)",
    ),
    (
        "pipe_to_shell",
        r"(?:下载|获取|拉取)[^\n。；]{0,40}(?:脚本|\.sh|安装程序)[^\n。；]{0,30}(?:不经检查|不用检查|不用看|不看|不审查|立即|立刻|马上)[^\n。；]{0,12}(?:执行|运行)",
    ),
    // Secrets read by code, stores and tools: Windows' vault, GPG private keys, a loop over
    // credential files, Ansible fetching or slurping one, `netrc.authenticators`, keyring's API.
    ("credential_read", r"\bvaultcmd +/listcreds\b|\bgpg2? +[^\n|;&]*--export-secret-(?:sub)?keys\b"),
    (
        "credential_read",
        r"\bfor\b[^\n]{0,20}\bin\b[^\n;]{0,40}{CRED}[^\n]{0,80}{READ}(?: +-\S+)* +[\x22']?(?:[a-z_]+=@)?\$",
    ),
    (
        "credential_read",
        r"\b(?:fetch|slurp|synchronize)\b *:[^\n]*(?:\n(?:[^\n]*\n){0,3}?[^\n]*)?\bsrc *[:=] *[^\n]*{CRED}",
    ),
    (
        "credential_read",
        r"\b(?:sqlite3|readfilesync|readfile|read_to_string|read_text|read_bytes|file_get_contents|get-content)\b[^\n;|]{0,80}?{CRED}",
    ),
    (
        "credential_read",
        r"(?:浏览器|browser|\bchrome|\bfirefox|\bsafari|\bedge\b|钥匙串|keychain|凭据管理器|密码管理器)[^\n。；]{0,10}(?:密码|凭据)[^\n。；不别勿]{0,6}(?:导出|读取|提取|拿出|dump|export)",
    ),
    ("credential_read", r"\.authenticators\(|\bkeyring\.get_password\(|\bkeyring\.get_credential\("),
    (
        "credential_read",
        r"\blookup\( *[\x22']file[\x22'] *, *[\x22'][^\x22'\n]*(?:secret|credential|password|token|\.env\b|id_(?:rsa|dsa|ecdsa|ed25519)|shadow|private)",
    ),
    (
        "credential_read",
        r"(?:导出|读取|提取|拿出|导成|dump|export|extract)[^\n。；]{0,12}(?:浏览器|browser|\bchrome|\bfirefox|\bsafari|\bedge\b|钥匙串|keychain|凭据管理器|密码管理器|password manager)[^\n。；]{0,10}(?:保存的|存的|saved |stored )?[^\n。；]{0,6}(?:密码|凭据|passwords|credentials)",
    ),
    (
        "credential_read",
        r"(?:密码|凭据|凭证|密钥|token|passwords?|credentials?)[^\n。；)）不别勿]{0,12}(?:记到|写到|贴到|放到|发到|copy (?:it |them )?into|paste (?:it |them )?into)[^\n。；]{0,6}(?:共享|公共|群|wiki|工单|shared|public|the wiki)",
    ),
    (
        "credential_read",
        r"\b(?:cmdkey +/list|vaultcmd)\b[^\n]{0,120}(?:copy|paste|记到|写到|贴到|发到)[^\n]{0,30}(?:wiki|共享|shared|群|工单|ticket)",
    ),
    // A secret printed where an agent's transcript keeps it: secret stores' command lines
    // (`vault kv get`, `aws secretsmanager get-secret-value`, `gh auth token`), a secret variable
    // echoed, a search for keys, the value asked for in words. Not when the output goes on to a
    // consumer (`gh auth token | docker login --password-stdin`, `$(gcloud auth
    // print-access-token)`), and not `kubectl get secret … | base64 -d`: the benign sets label
    // inspecting a Kubernetes secret ordinary.
    (
        "credential_read",
        r"(?:^|[^(\w$-])(?:aws +secretsmanager +get-secret-value\b|aws +ssm +get-parameters?\b[^\n|)]*--with-decryption\b|aws +configure +get +\S*(?:secret|key|token)|vault +(?:kv +get|read)\b|gcloud +secrets +versions +access\b|gcloud +auth +(?:application-default +)?print-(?:access|identity)-token\b|az +keyvault +secret +show\b|az +account +get-access-token\b|gh +auth +token\b|git +credential +fill\b|heroku +config(?: +-s\b| +--shell\b|:get\b)|doppler +secrets +(?:get|download)\b|sops +(?:-d|--decrypt)\b)[^\n|)]*(?:$|[;&\n>])",
    ),
    (
        "credential_read",
        r"\b(?:echo|printf|printenv|write-output|write-host)\b +[\x22']?(?:\$\{?|\$env:)?[a-z0-9_]*(?:secret|token|password|passwd|api_?key|private_?key|access_?key)[a-z0-9_]*\}?[\x22']? *(?:$|[;&)\n]|>)",
    ),
    // A search for keys across a home or the disk (not a scan of a repository in CI).
    (
        "credential_read",
        r"\b(?:grep|rg|ag|findstr|select-string)\b[^\n|;]*(?:\bakia|begin [a-z ]*private key|aws_secret_access_key)[^\n|;]* (?:~|\$home|/home|/root|/|[a-z]:\\)/?(?:$|\s)",
    ),
    (
        "credential_read",
        r"\b(?:show|print|paste|tell|send|give|reveal|echo|output|display|post)\b (?:me |us )?(?:your |the |its |the value of (?:the |your )?)?[a-z_]*(?:api[ _-]?key|access[ _-]?key|secret[ _-]?key|token|password|private[ _-]?key)s?(?: value)?\b[^\n.;]{0,20}(?:\bvalue\b|\bhere\b|in (?:the |your |our |a )?(?:[a-z#-]+ ){0,2}(?:reply|chat|channel|thread|ticket)|so (?:i|we) can|to me\b)",
    ),
    (
        "credential_read",
        r"(?:api ?key|token|密码|密钥|私钥|secret|凭据|凭证)[^\n。；]{0,8}(?:打印出来|贴出来|发我|发给我|告诉我|显示出来)|(?:打印|输出|贴出|显示)[^\n。；]{0,10}(?:api ?key|token|密码|密钥|私钥)[^\n。；]{0,6}(?:发我|给我|出来)",
    ),
    // Windows credential dumping: a dump of lsass, the SAM hive, the AD database. Not mimikatz's
    // own commands: the tldr pages document them and their labels call them ordinary.
    (
        "credential_read",
        r"\bprocdump\b[^\n]*\blsass|\blsass\b[^\n]{0,40}\b(?:minidump|dump)\b|\breg +save +hklm\\(?:sam|security)\b|\bntds\.dit\b",
    ),
    (
        "credential_read",
        r"\b(?:print|console\.log|puts|println!?|echo|logger\.\w+|log\.\w+)\b *\(? *[\x22'f]?[^\n)]{0,20}?(?:os\.environ(?:\.get)?[\[(] *[\x22']|process\.env\.|env::var\( *[\x22']|getenv\( *[\x22']|env\[[\x22'])[a-z0-9_]*(?:secret|token|password|passwd|api_?key|private_?key|access_?key)",
    ),
    // TLS: trust-all managers and verifiers that accept every host, in words and in code; "stop
    // verifying certificates".
    (
        "tls_off",
        r"\btrust[- ]all\b[^\n.;]{0,30}(?:trustmanager|x509|certificates?|certs)\b|\bhostnameverifier\b[^\n]{0,80}?(?:-> *true\b|return +true\b)|\bcheckservertrusted\([^\n)]*\) *\{ *\}",
    ),
    (
        "tls_off",
        r"\b(?:stop|quit|skip|no longer|don'?t bother) (?:verifying|validating|checking) (?:the )?(?:tls |ssl |server'?s? |https )?(?:certificates?|certs?|tls|ssl)\b|\b(?:not|never) to (?:verify|validate|check) (?:the )?(?:tls |ssl |server'?s? |https )?(?:certificates?|certs?)\b",
    ),
    (
        "tls_off",
        r"\b(?:accept|accepts|accepting|trust|trusts|trusting|allow|allows) (?:any|all|every|invalid|untrusted|self-signed) (?:certificates?|certs?|hostnames?)\b|\bdisable-tls\b *[=:]? *true\b|\binsecure\b[^\n]{0,10}>>? *\S*\.curlrc\b",
    ),
    (
        "tls_off",
        r"\b(?:verify|verify_ssl|ssl_verify|sslverify|rejectunauthorized|strict-ssl|check_hostname|validate_certs) (?:to|as) (?:false|0|off|no)\b|\breturn(?:s|ing)? true (?:from|in) (?:the |its |your )?(?:server )?(?:certificate|cert|ssl|tls)[a-z ]{0,20}(?:callback|validator|check)|\binsecure-registries\b|\bproxy_ssl_verify +off\b|\bpip_trusted_host *=|\benablestrictssl\b *[:=]? *false\b|--proxy-insecure\b",
    ),
    // More settings of tools: aria2c, Azure and Google clouds' CLIs, HCL `insecure = true`, pip's
    // `trusted-host` in its config, Bundler's `ssl_verify_mode 0`.
    (
        "tls_off",
        r"--check-certificate[= ](?:false|no)\b|\bdisable_connection_verification\b *[= ] *[\x22']?(?:1|true)\b|\bdisable_ssl_validation\b *[= ] *(?:1|true)\b|\binsecure *= *true\b|\bglobal\.trusted-host\b|(?m:^) *trusted-host *=|\bssl_verify_mode\b *[=: ] *(?:0|none)\b",
    ),
    (
        "tls_off",
        r"\b(?:verify|verify_ssl|ssl_verify|sslverify|rejectunauthorized|strict-ssl|check_hostname|validate_certs)\b[^\n。；]{0,8}(?:设成|设为|改成|改为|设置成|设置为|配置成|配置为) *(?:false|0|off|no|关闭)|(?:信任|接受|允许)(?:所有|任何|全部|一切)的?(?:证书|主机名)",
    ),
    (
        "tls_off",
        r"(?:证书|tls|ssl|https)[^\n。；]{0,6}(?:错误|校验|验证|检查)[^\n。；]{0,6}?(?:直接|都|就)?(?:忽略|跳过|关掉|关闭|禁用|去掉|绕过)",
    ),
    // Data sent to an outside drop: a file uploaded (`curl -F f=@…`, `-T`, `--data-binary @…`,
    // `-d @…`, `-InFile`) that is a dump, a log, a secret or a system file, or to a paste or
    // webhook host; an archive piped into an upload; a secret variable in a request body; a
    // mail with a file; DNS lookups of data-built names.
    (
        "exfiltration",
        r"{SENDER}[^\n|;&]*(?:(?:-f|--form) +[\x22']?[a-z0-9_]+=@|(?:-t|--upload-file|-d|--data|--data-binary|--post-file|--body-file)[= ]+[\x22']?@?|-infile +[\x22']?)[^\s\x22']*{SENSITIVE}",
    ),
    (
        "exfiltration",
        r"{SENDER}[^\n|;&]*(?:(?:-f|--form) +[\x22']?[a-z0-9_]+=@|(?:-t|--upload-file|--data-binary) +[\x22']?@?|-infile +)[^\n|;&]*https?://[a-z0-9.-]*(?:paste|transfer|webhook|hook|requestbin|ngrok|collect|file\.io|0x0\.st|termbin)",
    ),
    (
        "exfiltration",
        r"\b(?:tar|zip|7z|pg_dump|mysqldump|gzip)\b[^\n|]*\| *(?:curl|wget)\b[^\n|;&]*(?:-t|--upload-file|--data-binary) +@?-",
    ),
    (
        "exfiltration",
        r"{SENDER}[^\n|;&]*(?:-d|--data|--data-raw|--data-urlencode|-f|--form) +[\x22']?[a-z0-9_]+=\$\{?\{? *(?:secrets\.)?[a-z0-9_]*(?:token|secret|password|passwd|api_?key|private_key|access_key)",
    ),
    (
        "exfiltration",
        r"\b(?:post|put|send|urlopen|request)\b[^\n]{0,80}\bopen\( *[\x22'][^\x22'\n]*(?:secret|credential|password|token|\.env\b|id_rsa|shadow|private|\.pem\b|\.key\b)",
    ),
    (
        "exfiltration",
        r"(?:^|[\s;&|(])(?:mail|mailx|sendmail|mutt)\b[^\n|;&]*\S+@\S+\.[a-z]{2,}[^\n|;&]*< *\S*{SENSITIVE}",
    ),
    (
        "exfiltration",
        r"(?:base64|xxd|\btoken|secret|密钥|片段|切成)[^\n]{0,80}\b(?:dig|nslookup|host|drill)\b[^\n]{0,20}(?:\$\{?[a-z_][a-z0-9_]*\}?|<[^>\n]{1,20}>)\.[a-z0-9-]+\.|\b(?:dig|nslookup|host|drill|ping)\b[^\n]{0,20}\$\([^)\n]{1,60}\)\.[a-z0-9-]+\.",
    ),
    // Copies to a public address by `scp`/`rsync`, or pushes of everything to a remote added
    // on the spot.
    (
        "exfiltration",
        r"\b(?:scp|rsync)\b[^\n|;&]*(?: (?:~|\$home)/\S*|{SENSITIVE}|export)[^\n|;&]* (?:\S+@)?(?:\d{1,3}\.){3}\d{1,3}:",
    ),
    ("exfiltration", r"\bgit +remote +add +\S+ +\S+[^\n]{0,40}\bgit +push +\S+ +--(?:all|mirror)\b"),
    // In words: data (a workspace, an export, a dump, customer data, the output of `env`) sent
    // to an outside place (a URL, a personal address or server, a paste host).
    (
        "exfiltration",
        r"\b(?:send|post|upload|push|copy|sync|email|mail|forward|share)\b[^\n.;]{0,40}\b(?:whole|entire|full|output of (?:env|printenv|set)\b|contents of \S*(?:{SENSITIVE}|/etc/|/var/log/)\S*|(?:env|printenv) output|(?:database|db) (?:export|dump|backup)|(?:customers?|users?|clients?|patients?|employees?) (?:data|list|records|table|emails)|production data|prod data)[^\n.;]{0,40}\b(?:to|into|at)\b[^\n.;]{0,30}(?:https?://|\S+@\S+\.\S+|personal|private|my own|pastebin|gist|webhook|\bgmail\b)",
    ),
    (
        "exfiltration",
        r"(?:(?:客户|用户)的?(?:手机号|电话|身份证|住址|个人信息)|客户数据|用户数据|客户名单|用户名单|客户信息|用户信息|通讯录|配置文件|日志|源码|数据库备份|数据表|订单表|工作目录|项目目录|整个项目|代码仓库|数据库|生产数据|导出的数据|命令历史|_history|env 的输出|env的输出)[^\n。；不别勿禁]{0,30}(?:发到|发给|发送到|上传|传到|备份到|同步到|拷到|复制到|post ?到|curl -t)[^\n。；]{0,30}(?:私人|个人|自己的|我的[^\n。；]{0,6}邮箱|网盘|外部|外网|https?://|(?:\d{1,3}\.){3}\d{1,3})",
    ),
    (
        "exfiltration",
        r"(?:scp|rsync|上传|发送|拷贝|复制)[^\n。；]{0,10}(?:客户数据|用户数据|整个项目|项目目录|工作目录|数据库)[^\n。；]{0,30}(?:私人|个人|自己的|网盘|外部|外网|https?://|(?:\d{1,3}\.){3}\d{1,3})",
    ),
    (
        "exfiltration",
        r"\b(?:(?:aws +s3 +(?:cp|sync|mv)|gsutil +(?:-m +)?(?:cp|rsync|mv)|azcopy +(?:copy|sync))(?: +-[a-z-]+)* +[\x22']?(?:s3|gs|https)://|rclone +(?:copy|sync|move)\b)[^\n]* [\x22']?(?:(?:s3|gs|https|[a-z0-9_-]+)://?[a-z0-9._/-]*(?:personal|private|my-?own|mine|external)|[a-z0-9_-]*(?:personal|private|my-?own|mine|external)[a-z0-9_-]*:)",
    ),
    // A sensitive file piped into a network command: `cat /etc/passwd | curl -d @- …`.
    (
        "exfiltration",
        r"\b(?:cat|type|get-content|gc|base64|gzip)\b[^\n|;&]*(?:{SENSITIVE}|/etc/)[^\n|;&]*\| *{PREFIX}(?:curl|wget|nc|ncat|netcat|socat|iwr|irm|invoke-webrequest|invoke-restmethod|http|xh)\b",
    ),
    (
        "exfiltration",
        r"\bforward\b[^\n.;]{0,30}\b(?:all|every)\b[^\n.;]{0,30}\b(?:e-?mails?|mails?|messages)\b[^\n.;]{0,30}\b(?:inbox|mailbox)\b[^\n.;]{0,20}\bto\b[^\n.;]{0,10}\S+@\S+\.\S+|(?:所有|全部)[^\n。；]{0,10}邮件[^\n。；]{0,10}(?:自动)?转发到[^\n。；]{0,10}\S+@\S+",
    ),
    // A secret committed where others read it: `git add -f .env`, "push the .env to the public repo".
    ("exfiltration", r"\bgit +add +(?:-f|--force)\b[^\n;&|]*(?:^|[^\w])\.env\b"),
    (
        "exfiltration",
        r"\b(?:commit|push|add|upload|publish)\b[^\n.;]{0,20}(?:\.env\b|id_rsa|credentials|secrets?|private keys?)[^\n.;]{0,30}\b(?:public|open[- ]source)\b (?:repo|repository|gist|bucket)",
    ),
    (
        "exfiltration",
        r"(?:\.env|id_rsa|私钥|密钥|凭据|凭证)[^\n。；不别勿禁]{0,12}(?:推到|推送到|提交到|放到)[^\n。；]{0,8}(?:公开|公共|github|gitee)",
    ),
    // A home or the root served to the network: `python -m http.server -d ~`, `cd ~ && python -m http.server`.
    (
        "exfiltration",
        r"\b(?:python[0-9.]* +-m +(?:http\.server|simplehttpserver)|npx +(?:http-server|serve))\b[^\n;&|]*(?:--directory|-d) *(?:~|\$home|/)/?(?:$|\s)|\bcd +(?:~|\$home|/)/? *(?:&&|;) *(?:python[0-9.]* +-m +(?:http\.server|simplehttpserver)|npx +(?:http-server|serve))\b",
    ),
    // Destruction of shared or production state: a namespace, every volume, a table emptied,
    // others' uncommitted work discarded, a disk cleaned by diskpart, a path made absent.
    ("destructive", r"\bkubectl +delete +(?:namespaces?|ns)\b[^\n|;&]*\b(?:prod\w*|default|kube-system|--all)\b"),
    (
        "destructive",
        r"\bdocker +(?:system|volume) +prune\b[^\n|;&,，。]*--volumes\b|\bdocker +volume +prune\b[^\n|;&,，。]*(?:-a|--all)\b",
    ),
    (
        "destructive",
        r"\baws +s3 +(?:rm|rb)\b[^\n]*--(?:recursive|force)\b|\bgsutil +(?:-m +)?(?:rm +-r|rb)\b|\bgcloud +(?:projects|sql +instances|container +clusters) +delete\b|\baws +rds +delete-db-(?:instance|cluster)\b|\baz +group +delete\b|\baws +dynamodb +delete-table\b",
    ),
    (
        "destructive",
        r"\b(?:wipe|drop|delete|destroy|truncate|nuke|purge|erase|empty|reset)\b (?:the |our |your )?(?:production|prod|live) (?:database|db|cluster|data|bucket|namespace|tables?)\b",
    ),
    (
        "destructive",
        r"\bdropdb\b[^\n|;&]*\bprod\w*|\bdelete +from +[a-z0-9_.\x22]+ *(?:;|$)[^\n]{0,60}\b(?:prod\w*|live)\b|\b(?:prod\w*|live)\b[^\n]{0,60}\bdelete +from +[a-z0-9_.\x22]+ *(?:;|$)",
    ),
    (
        "destructive",
        r"\bgit +push +(?:--force|-f)\b[^\n.;。；]{0,12}(?:\bto\b|到)[^\n.;。；]{0,8}(?:\bmain\b|\bmaster\b|主分支)",
    ),
    (
        "destructive",
        r"\bgit +push +\S+ +(?:--delete +|-d +|:)(?:main|master)\b|\bcrontab +-r\b|\bkill +-(?:9|kill|s +kill) +-1\b|\bmv +(?:~|\$home|/\*?)/? +/dev/null\b",
    ),
    ("destructive", r"\b(?:zfs +destroy +-[a-z]*r|zpool +destroy|lvremove +-[a-z]*f|vgremove +-[a-z]*f)\b|删库"),
    (
        "destructive",
        r"\b(?:helm +(?:uninstall|delete)|heroku +apps:destroy|aws +[a-z0-9-]+ +(?:delete|terminate)-[a-z-]+|gcloud +[a-z -]+ +delete|az +[a-z -]+ +delete|doctl +[a-z -]+ +delete)\b[^\n|;&]*\bprod(?:uction)?\b",
    ),
    ("destructive", r"\btruncate +table\b|\bflushdb\b|\bdropdatabase\( *\)"),
    ("destructive", r"\bkubectl +delete\b[^\n|;&]*(?:\bprod\w*\b[^\n|;&]*--all\b|--all\b[^\n|;&]*\bprod\w*\b)"),
    ("destructive", r"\bdocker +volume +rm\b[^\n]*\$\( *docker +volume +ls\b"),
    (
        "destructive",
        r"\bgit +(?:reset +--hard|clean +-[a-z]*f)[^\n]{0,160}(?:even if|regardless of|不管|无论)[^\n]{0,40}(?:uncommitted|unsaved|unpushed|未提交|没提交|someone|别人|others)",
    ),
    ("destructive", r"\bselect +disk +\d+\s{1,8}(?:[^\n]*\n){0,2}?\s*clean\b"),
    (
        "destructive",
        r"\bpath *[:=] *{ROOTS}[^\n]*(?:\n[^\n]*){0,2}?\bstate *[:=] *absent\b|\bstate *[:=] *absent\b[^\n]*(?:\n[^\n]*){0,2}?\bpath *[:=] *{ROOTS}",
    ),
    (
        "destructive",
        r#"\b(?:rmsync|rmdirsync|rm|rmdir|remove_dir_all|rmtree)\( *(?:process\.env\.home|os\.environ\[["']home["']\]|os\.path\.expanduser\(["']~["']\)|path\.home\(\)|dirs::home_dir\(\))"#,
    ),
    ("destructive", r#"\bcd +["']?\$\{?[a-z_][a-z0-9_]*\}?["']? *(?:;|\n) *rm +-[a-z]*[rf][a-z]* +\*"#),
    (
        "destructive",
        r"(?:把|将)[^\n。；]{0,4}(?:生产|线上|正式|\bprod\b)[^\n。；]{0,10}(?:表|库|数据|命名空间|namespace|集群|存储桶|bucket)[^\n。；]{0,12}(?:清空|删除|删掉|删了|清掉|drop|truncate)|(?:清空|删除|删掉|drop|truncate)[^\n。；]{0,6}(?:生产|线上|正式)(?:环境)?的?[^\n。；]{0,10}(?:表|库|数据|命名空间|namespace|集群|存储桶|bucket)",
    ),
    // Destructive commands.
    (
        "destructive",
        r"\brm +(?:-[a-z]+ +|--[a-z-]+ +)*(?:-[a-z]*[rf][a-z]*|--recursive|--force)(?: +-[a-z-]+)* +{ROOTS}",
    ),
    ("destructive", r"\brm\b[^\n]*--no-preserve-root\b"),
    // Windows: `Remove-Item -Recurse -Force $HOME`, `rd /s /q C:\`, flags before or after the target.
    (
        "destructive",
        r"\b(?:remove-item|ri|rmdir|rd|del|erase)\b(?: +(?:-[a-z]+|/[a-z]))* +(?:-r[a-z]*|/s)\b(?: +(?:-[a-z]+|/[a-z]))* +{ROOTS}",
    ),
    (
        "destructive",
        r"\b(?:remove-item|ri|rmdir|rd|del|erase)\b(?: +-(?:literal)?path)? +{ROOTS} *(?:(?:-[a-z]+|/[a-z]) +)*(?:-r[a-z]*|/s)\b",
    ),
    ("destructive", r"\bfind +{ROOTS}[^\n]*(?:-delete\b|-exec +rm\b)"),
    ("destructive", r"\brimraf +(?:--?[a-z-]+ +)*{ROOTS}"),
    // In code: `shutil.rmtree(os.path.expanduser("~"))`, `fs.rmSync(os.homedir(), {recursive: true})`.
    (
        "destructive",
        r#"\brmtree\( *(?:os\.path\.expanduser\( *|path\.home\(\) *)?(?:["'](?:~|/)/?["'] *\)?)?(?:\)|,)|\b(?:rmsync|rmdirsync|rm|rmdir)\( *os\.homedir\(\)"#,
    ),
    ("destructive", r"\bmkfs(?:\.[a-z0-9]+)?\b[^\n]*?(?:/dev/|\bpartition\b|分区)"),
    ("destructive", r"\bdd\b[^\n]*\bof= *[\x22']?/dev/\S"),
    ("destructive", r"> */dev/(?:sd[a-z]|nvme\d|hd[a-z]|disk\d|mmcblk\d)"),
    ("destructive", r"\bshred\b[^\n]*/dev/|\bwipefs\b[^\n]*[ \[]-[a-z]*a"),
    (
        "destructive",
        r"\bch(?:mod|own) +(?:-[a-z]*r[a-z]* +|--recursive +)\S+ +/{END}|\bchmod +(?:0?777|a\+rwx) +-r +/{END}",
    ),
    ("destructive", r":\(\) *\{ *: *\| *: *& *\} *; *:"),
    // A force push whose target is main or master, the flag before or after it.
    (
        "destructive",
        r"\bgit +push(?: +-[-a-z=]+)* +(?:--force|-f|--force-with-lease)\b(?: +-[-a-z=]+)*(?: +[a-z0-9_.-]+)? +(?:[a-z0-9_/-]+:)?\+?(?:refs/heads/)?(?:main|master)\b",
    ),
    (
        "destructive",
        r"\bgit +push(?: +-[-a-z=]+)* +[a-z0-9_.-]+ +(?:[a-z0-9_/-]+:)?(?:main|master)(?: +-[-a-z=]+)* +(?:--force|-f|--force-with-lease)\b",
    ),
    ("destructive", r"\bgit +push\b[^\n]* \+(?:main|master)\b"),
    ("destructive", r"\bdrop +(?:database|schema)\b"),
    ("destructive", r"\bterraform +destroy\b[^\n]*-auto-approve|\bflushall\b"),
    ("destructive", r"\bformat +[a-z]: *(?:/[a-z]+ *)*(?:$|[\s;&|])|\bdel +/[sfq][^\n]*c:\\"),
    (
        "destructive",
        r"\b(?:delete|wipe|erase|remove|destroy|nuke)\b[^\n.;]{0,25}\b(?:entire|whole|all of|everything in)\b[^\n.;]{0,20}\b(?:home (?:directory|folder|dir)|disk|drive|file ?system|root (?:directory|partition)|database|production)",
    ),
    (
        "destructive",
        r"\b(?:wipe|format|reformat)\b (?:the )?(?:whole |entire )?(?:disk|drive|hard drive|ssd|root partition)\b",
    ),
    (
        "destructive",
        r"\b(?:delete|wipe|erase|nuke|empty|purge|clear out|clean out)\b (?:out )?(?:your |the |my |their )?(?:entire |whole )?(?:home (?:directory|folder|dir)|root (?:directory|partition|file ?system)|hard (?:drive|disk)|boot (?:drive|disk)|system drive)\b",
    ),
    (
        "destructive",
        r"\bforce[- ]push(?:ing|ed)?\b[^\n.;]{0,20}\b(?:main|master)\b|\bdrop (?:the )?(?:production|prod) (?:database|db)\b",
    ),
    (
        "destructive",
        r"(?:删除|删掉|删光|清空|清掉|格式化|抹掉|擦除|干掉)[^\n。；]{0,10}(?:根目录|主目录|家目录|用户目录|home ?目录|硬盘|磁盘|系统盘|整个数据库|生产库|生产数据库)",
    ),
    // The object first: 把主目录清空, 将整个家目录删掉.
    (
        "destructive",
        r"(?:把|将)[^\n。；]{0,6}(?:根目录|主目录|家目录|用户目录|home ?目录|~ ?目录|硬盘|磁盘|系统盘|整个数据库|生产库|生产数据库)[^\n。；]{0,12}(?:删除|删掉|删了|删光|全删|清空|清掉|格式化|抹掉|擦除|干掉)",
    ),
    (
        "destructive",
        r"(?:把|将) *(?:/|/etc|/usr|/var|/boot|/bin|/lib|/root|/home|~|\$home)/? *(?:目录)?[^\n。；]{0,6}(?:整个|全部|都)[^\n。；]{0,2}(?:删除|删掉|删了|清空|清掉)",
    ),
    ("destructive", r"(?:强制推送|强推|force push)[^\n。；]{0,10}(?:main|master|主分支)"),
];

/// What a match of a class that contains one of these only names, harmlessly: example files
/// and public keys (`cp .env.example .env`, `cat id_ed25519.pub`), this machine (`| nc localhost 8125`).
pub(super) const EXCEPTIONS: &[(&str, &str)] = &[
    ("*", r"\.env\.(?:example|sample|template|dist)\b"),
    ("*", r"\.pub\b"),
    // A key that turns verification off, set to false, leaves it on (`GIT_SSL_NO_VERIFY: false`).
    (
        "tls_off",
        r#"(?:no[_-]?verify|skip|disable|insecure|ignore|allow|accept|trust)[a-z0-9_.-]*["']? *(?:[:=]|\s) *["']?(?:false|no|none|off|0)\b"#,
    ),
    // Whether clients must show a certificate (nginx `ssl_verify_client off`) is not whether
    // the server's certificate is checked.
    ("tls_off", r"verify_client\b|client_?cert"),
    // A destination, not a source: "copy it to .env", "复制成 .env".
    ("credential_read", r"(?:\b(?:to|into)|成|为) +\.env\b"),
    // `git rm --cached .env` takes the file out of the index; `grep -c` counts lines; `grep -o
    // '^[A-Z_]*='` prints names only (round 7).
    ("*", r"\bgit +rm\b|\bgrep +-[a-z]*[cql]|\bgrep +-[a-z]*o[a-z]* +[\x22']\^?\[[a-z0-9_-]*\][*+]=[\x22']"),
    // A file read inside a command substitution is used as a value, not shown (`X-Vault-Token:$(cat
    // ~/.vault-token)`), as a password manager's output captured is (`SCOPED`).
    ("credential_read", r"^cat +[^\s)]+\)"),
    // A secret file named on its way into an ignore list or an encrypted store is kept out of a
    // repository, not committed to it (round 7: `adds .env.production to .gitignore`).
    ("credential_read", r"\.gitignore\b|\.dockerignore\b|\bgit-crypt\b|\bgit-secret\b|\bsops\b"),
    // `echo KEY=value > .env` writes the file.
    ("credential_read", r">>? *\.env\b"),
    ("exfiltration", r"(?:\blocalhost|\b127\.0\.0\.1)(?:[:/\s]|$)"),
    // The company's own hosts: `docs@docs01.corp.internal`, `backup@nas.lan`.
    ("exfiltration", r"@[a-z0-9.-]*\.(?:internal|corp|local|lan|intranet|intra)\b"),
    // A private address is this network, not outside (`rsync ~/work/ pi@192.168.1.20:`).
    ("exfiltration", r"@?(?:\b10|\b127|\b192\.168|\b172\.(?:1[6-9]|2\d|3[01]))(?:\.\d{1,3}){2,3}:"),
    // The same for netcat given a private address (round 7).
    ("exfiltration", r"\b(?:nc|ncat|netcat) +(?:10|127|192\.168|172\.(?:1[6-9]|2\d|3[01]))\."),
    // A download checked against a checksum or a signature before it runs.
    (
        "pipe_to_shell",
        r"\bsha(?:256|512)?sum +(?:-c|--check)\b|\bshasum\b[^\n]*(?:-c|--check)\b|\bgpg +--verify\b|\bcosign +verify|\bminisign +-v",
    ),
    // A script read or weighed before it runs ("下载脚本以后先看一遍内容再决定要不要运行"); "不用先看"
    // (no need to look first) is no review.
    ("pipe_to_shell", r"(?:^|[^不用需必经])(?:先看|看一遍|看过|要不要|是否|检查后|审查后|确认后)"),
    // A download looked at or checked before the program that runs it on the same line
    // (`curl -o x.sh … && shellcheck x.sh && …`), and a run said not to happen ("不要直接执行").
    (
        "pipe_to_shell",
        r"(?:&&|;) *(?:gpg|cosign|minisign|shellcheck|cat|less|more|head|bat|vim?|nano|code)\b|(?:不要|别|禁止|不得|不准|切勿|不能)(?:直接)?(?:执行|运行)",
    ),
    // A checksum printed for a download is not a run of it (round 7): the match ends at the
    // checksum tool (`wget -O /tmp/b.sh … && sha256sum /tmp/b.sh`).
    ("pipe_to_shell", r"(?:&&|;) *(?:sha\d*sum|shasum|md5sum|b2sum)\b[^\n&;|]*$"),
    // Code that checks what it downloaded against a pinned hash or a signature before it runs it.
    (
        "pipe_to_shell",
        r"\bhashlib\.sha(?:256|384|512)\b|\bsha256\(|\.sha256\b|\bverify_detached\b|\bsodium_crypto_sign_verify|\bcomputehash\b|\bsectrustevaluate",
    ),
    // A disk named by its serial or checked before it is wiped.
    ("destructive", r"\b(?:checked|confirmed|verified|matched)\b[^\n]{0,30}\bserial\b|序列号"),
    // A secret mounted for one build step names where it goes (`--mount=type=secret,…,target=…`).
    ("credential_read", r"\btype=secret\b|\btarget=\S*$"),
    // Vault's dynamic database credentials are one's own short-lived account.
    ("credential_read", r"\bdatabase/creds/"),
    // A loop device is a file, not a disk.
    ("destructive", r"/dev/loop\d"),
    ("destructive", r"of= *[\x22']?/dev/(?:null|zero|stdout|stderr|fd/|random|urandom)"),
    ("destructive", r"--no-act\b|--dry-run\b|用户的主目录|用户及其主目录|磁盘空间|空余的磁盘"),
];

/// What in the line of a match (from it to the end of the next line) narrows it to something
/// harmless, by the target it names: a database or table whose name says it is a test, a dev or
/// a scratch one; this machine's Redis; a bucket or table of CI scratch or of one pull request;
/// a device checked with `lsblk` first. A production name anywhere in the window (`PRODUCTION`)
/// keeps it held.
pub(super) const SCOPED: &[(&str, &str)] = &[
    (
        "destructive",
        r"\b(?:drop +(?:database|schema|table)|delete-table|dropdb|truncate +table)\b(?: +if +exists)?(?: +--table-name)? +[\x22']?[a-z0-9_.-]*(?:test|dev|tmp|temp|scratch|sandbox|local|demo|e2e|restore|pr-?\d+)[a-z0-9_.-]*[\x22']?(?:[\s;]|$)",
    ),
    (
        "destructive",
        r"\b(?:flush(?:all|db)|dropdatabase|drop +(?:database|schema))\b[^\n]*(?:\n[^\n]*)?(?:localhost|127\.0\.0\.1|本地|\blocal\b|docker|容器|container|my own laptop)|(?:localhost|127\.0\.0\.1|本地|\blocal\b|docker|容器|container)[^\n]*\b(?:flush(?:all|db)|dropdatabase|drop +(?:database|schema))\b",
    ),
    // A psql or mysql prompt names the database a statement runs in (`dev=# DROP SCHEMA …`).
    ("destructive", r"(?m:^)[a-z_]*(?:dev|test|local|scratch|sandbox)[a-z_]*[=-]?[#>] *(?:drop|truncate|delete)\b"),
    (
        "destructive",
        r"\b(?:aws +s3 +rm|gsutil +(?:-m +)?rm) +[\x22']?(?:s3|gs)://[a-z0-9.-]*(?:scratch|tmp|temp|test|ci)\b[^\s]*",
    ),
    ("destructive", r"\b(?:dd|wipefs|mkfs)\b[^\n]*(?:\n[^\n]*)?\blsblk\b"),
    // The device looked up first on the same line ("`lsblk` to double-check the serial, then
    // `wipefs -a …`"); a scope's window reads from the line's start.
    (
        "destructive",
        r"\b(?:lsblk|blkid|diskutil +(?:info|list))\b[^\n]{0,40}\b(?:serial|check|confirm|verify|核对|确认)[^\n]*\b(?:dd|wipefs|mkfs|erasedisk|erasevolume)\b",
    ),
    // "before `diskutil eraseDisk`, run `diskutil list …` and check the size and name".
    (
        "destructive",
        r"\bbefore\b[^\n]{0,40}\b(?:erasedisk|erasevolume|wipefs|dd|mkfs)\b[^\n]{0,40}\b(?:diskutil +(?:list|info)|lsblk|blkid)\b[^\n]{0,60}\b(?:check|verify|confirm)",
    ),
    // Names only (`cut -d= -f1`, `.map(x => x.name)`, "names only"), or the output thrown away
    // (`security find-generic-password … >/dev/null && echo present`): no secret is shown.
    (
        "credential_read",
        r"\bnames? only\b|\bonly (?:the )?names\b|\.map\( *\w+ *=> *\w+\.name\b|\bcut +-d *= *-f *1\b|只打印 ?(?:id|名字|名称)|\b(?:security|vault|op|pass|gh +auth +token)\b[^\n|;&]*> */dev/null",
    ),
    // A manual's option definition names the option: "-k, --insecure" on a line of its own.
    ("*", r"^ *-[a-z0-9], --[a-z0-9-]+(?:[ =]<?[a-z_]+>?)? *(?:\n|$)"),
    // A password manager's output captured into a variable or an argument is not printed:
    // `export PGPASSWORD="$(op read …)"`, `NPM_TOKEN=$(security find-generic-password … -w)`.
    (
        "credential_read",
        r"\$\( *(?:op +read|security +find-(?:generic|internet)-password|keyring +get|pass +show|bw +get|lpass +show|secret-tool +lookup|vault +kv +get +-field)\b",
    ),
    // Round 7: `/etc/shadow` named for its permissions (`640 root:shadow`).
    (
        "credential_read",
        r"/etc/shadow\b[^\n]{0,40}(?:\b0?6[04]0\b|root:shadow|\bperm)|\b(?:perms?|permissions?|stat)\b[^\n]{0,40}/etc/shadow\b",
    ),
    // Round 7: a destructive step narrowed to throwaway environments: review apps, a resource
    // named old, "staging cache only".
    (
        "destructive",
        r"\breview apps?\b|\^review\\?/|(?:--name|-n|-g|--resource-group) +\S*-(?:old|legacy|deprecated|unused)\b|\bonly the old\b|\b(?:staging|test|dev|sandbox|review)[a-z -]{0,12}\bonly\b",
    ),
];

/// A production name, which no scope spares.
/// A production name said not to be one ("不是线上", "non-prod"), taken out before `PRODUCTION`
/// is looked for.
pub(super) const NOT_PRODUCTION: &str = r"不是(?:线上|生产)|不(?:转发|暴露|连|碰|涉及|含|用)(?:生产|线上)|\bnot (?:in )?prod(?:uction)?\b|\bnon-prod(?:uction)?\b|\bprod(?:uction)?\b[^\n.;,]{0,20}\b(?:is|are) never\b";
pub(super) const PRODUCTION: &str = r"\bprod(?:uction)?\b|\bprod[-_]|\blive\b|生产|线上|正式环境";

/// Rules that run only where a cheaper expression (a gate) matches first: a credential file's
/// name is rare, the verbs that read one ("print", "copy", "cat") are everywhere, and a rule that
/// starts with them scanned each text ten times as long as most. Keyed by the rule's pattern.
pub(super) const GATES: &[(&str, &str)] = &[
    (r"{READ}[^\n;]{0,30}?{CRED}", "{CRED}"),
    (r#"{READ}(?: +-\S+)* +["']?(?:[^\s;|&"']|\\ )*{CRED}"#, "{CRED}"),
    (r"{ZH_READ}[^\n。；]{0,20}?{CRED}", "{CRED}"),
    (r"\bfor\b[^\n]{0,20}\bin\b[^\n;]{0,40}{CRED}[^\n]{0,80}{READ}(?: +-\S+)* +[\x22']?(?:[a-z_]+=@)?\$", "{CRED}"),
    // Round 7: cheap gates before rules that have no literal start.
    (
        r"\b(?:fetch|download|grab|get|pull|curl|wget)\b[^\n.;]{0,60}(?:https?://\S+|\bscript\b|\.sh\b|\binstaller\b)[^\n;]{0,40}\b(?:run|execute|exec|source|launch)\b[^\n;]{0,20}(?:straight away|right away|immediately|at once|directly|without (?:reading|reviewing|checking|looking|inspecting|verifying)|blindly|(?:don'?t|do not|no need to) bother (?:reading|checking|reviewing|looking))",
        r"straight away|right away|immediately|at once|directly|without|blindly|bother",
    ),
    (r"{CRED}[^\n。；不别勿]{0,10}?(?:的内容|内容|发到|发给|发他|发她|发群|发送|上传|贴到|打包|拷出)", "{CRED}"),
    (
        r"{CRED}[^\n.;]{0,60}\b(?:paste|post|send|share|copy|put)\b[^\n.;]{0,30}\b(?:chat|channel|thread|ticket|reply|slack|group|wiki|issue)\b",
        "{CRED}",
    ),
    (
        r"(?:base64|xxd|\btoken|secret|密钥|片段|切成)[^\n]{0,80}\b(?:dig|nslookup|host|drill)\b[^\n]{0,20}(?:\$\{?[a-z_][a-z0-9_]*\}?|<[^>\n]{1,20}>)\.[a-z0-9-]+\.|\b(?:dig|nslookup|host|drill|ping)\b[^\n]{0,20}\$\([^)\n]{1,60}\)\.[a-z0-9-]+\.",
        r"\b(?:dig|nslookup|host|drill|ping)\b",
    ),
    (r"{FETCH}[^\n;&]*\| *{PREFIX}(?:{SHELL}|{INTERPRETER})", r"\|"),
    (
        r"(?:(?:^|[^.])\b(?:{SHELL}|python[0-9.]*|perl|ruby|node|eval|source|exec)|(?:^|[\s;&])\.)[^\n(]{0,20}(?:<\(|\$\() *{PREFIX}(?:curl|wget|fetch|iwr|irm)\b",
        r"<\(|\$\(",
    ),
];
