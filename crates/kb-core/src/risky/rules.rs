//! The risky actions as data: named regular expressions per action class, the word lists they
//! share, the negation cues that spare a clause ("instead of disabling TLS verification"), and
//! the exceptions that spare a match ("cp .env.example .env", "cat id_ed25519.pub").
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
];

/// Commands and forms that fetch something from the network.
const FETCH: &str = r"(?:\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|aria2c)\b|https?://)";
/// What may stand before a command: `sudo` with options, `env`, variable assignments, a path.
const PREFIX: &str = r"(?:(?:sudo(?: +-[a-z-]+(?: +[a-z0-9_]+)?)*|doas|env(?: +-[a-z]+)*|[a-z_][a-z0-9_]*=\S*|/(?:usr/)?(?:local/)?bin/) +)*(?:/(?:usr/)?(?:local/)?bin/)?";
/// Shells, which run whatever they are given.
const SHELL: &str = r"(?:(?:ba|z|da|k|c|tc|fi|a)?sh|iex|invoke-expression|pwsh|powershell)\b";
/// Interpreters, which run their standard input only without a script or `-m`/`-c`.
const INTERPRETER: &str = r"(?:python[0-9.]*|perl|ruby|node|php)(?: +-)? *(?:$|[;&)|\n])";
/// Files and stores that hold credentials. `.env` only as a file name of its own (not
/// `process.env`, not `.env.example`).
const CRED: &str = concat!(
    r"(?:(?:^|[^\w])\.env(?:\.(?:local|production|prod|development|dev|staging|test))?(?:$|[^\w.\-/])",
    r"|\.aws/(?:credentials|config)\b|~/\.aws\b|\$home/\.aws\b",
    r"|\.ssh/(?:id_[a-z0-9_]+(?:\.pub\b)?|identity|\*)|(?:~|\$home|\$\{home\})/\.ssh(?:/)?(?:$|[\s;&|)])|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?:\.pub\b)?",
    r"|\.netrc\b|\.pgpass\b|\.git-credentials\b|\.docker/config\.json|\.kube/config\b|/etc/shadow\b",
    r"|\.npmrc\b|\.pypirc\b|\.config/gcloud\b|\.gnupg\b|\.password-store\b|\.keychain(?:-db)?\b|\bkeychains?\b|钥匙串)",
);
/// Verbs that read, copy or send a file's contents.
const READ: &str = concat!(
    r"\b(?:cat|less|more|head|tail|bat|strings|xxd|hexdump|od|base64|get-content|gc|print|printf|dump|echo",
    r"|read|copy|cp|scp|rsync|upload|send|post|paste|exfiltrate|share|attach|grep|tar|zip|mail|nc|ncat|curl|wget",
    r"|reveal|leak|transmit|forward|submit|kb_submit|output|contents? of)\b",
);
const ZH_READ: &str =
    r"(?:读取|读出|读一下|查看|打开|输出|打印|显示|复制|拷贝|上传|发送|发到|发给|贴到|粘贴|提交|打包|内容)";
/// The end of a command-line word.
const END: &str = r#"(?:$|[\s;&|"')])"#;
/// Targets whose recursive removal destroys a system or a home directory.
const ROOTS: &str =
    r"(?:/|/\*|~|~/|~/\*|\$home|\$home/|\$home/\*|\$\{home\}|\$\{home\}/|/home|/etc|/usr|/var|/boot|/bin|/lib|c:\\)";

/// Every rule with its class.
pub(super) const RULES: &[(&str, &str)] = &[
    // A download piped into a shell or an interpreter, within one pipeline.
    ("pipe_to_shell", r"{FETCH}[^\n;&]*\| *{PREFIX}(?:{SHELL}|{INTERPRETER})"),
    // `bash <(curl …)`, `sh -c "$(curl …)"`, `source <(wget …)`, `eval "$(curl …)"`.
    (
        "pipe_to_shell",
        r"(?:\b(?:{SHELL}|python[0-9.]*|perl|ruby|node|eval|source|exec)|(?:^|[\s;&])\.)[^\n(]{0,20}(?:<\(|\$\() *{PREFIX}(?:curl|wget|fetch|iwr|irm)\b",
    ),
    // PowerShell: `iex (iwr …)`, `iwr … | iex`, `(New-Object Net.WebClient).DownloadString(…) | iex`.
    (
        "pipe_to_shell",
        r"\b(?:iex|invoke-expression)\b[^\n]{0,10}\(+ *(?:iwr|irm|invoke-webrequest|invoke-restmethod|new-object +(?:system\.)?net\.webclient)",
    ),
    ("pipe_to_shell", r"\b(?:downloadstring|downloadfile)\b[^\n]*\| *(?:iex|invoke-expression)\b"),
    ("pipe_to_shell", r"\b(?:iex|invoke-expression)\b[^\n]{0,40}\bdownloadstring\b"),
    // A script downloaded and then run: `curl -o x.sh URL && sh x.sh`, `wget URL/fix.sh; chmod +x fix.sh; ./fix.sh`.
    (
        "pipe_to_shell",
        r"{FETCH}[^\n]*?\.(?:sh|bash|ps1)\b[^\n]*?(?:&&|;|\n) *(?:chmod +\+x +\S+ *(?:&&|;|\n) *)?{PREFIX}(?:(?:ba|z)?sh +|\./|pwsh +|powershell +)\S*\.(?:sh|bash|ps1)\b",
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
        r"\b(?:pipe|pipes|piping|piped|feed|feeding)\b[^\n.;]{0,60}\b(?:in)?to +(?:sudo +)?(?:(?:ba|z)?sh\b|(?:a |the )?(?:root )?shell\b)",
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
    ("credential_read", r"{ZH_READ}[^\n。；]{0,20}?{CRED}"),
    ("credential_read", r"{CRED}[^\n。；不别勿]{0,10}?(?:的内容|内容|发到|发给|发送|上传|贴到)"),
    ("credential_read", r"\bsecurity +(?:find-generic-password|find-internet-password|dump-keychain)\b"),
    ("credential_read", r"\bsecret-tool +lookup\b"),
    (
        "credential_read",
        r"\b(?:read|dump|export|extract|print|get|copy)\b[^\n.;]{0,30}\b(?:keychain|credential manager|password store|saved passwords)\b",
    ),
    // TLS verification turned off, as flags, settings and environment variables.
    ("tls_off", r"\bcurl\b[^\n|;&]*?[ \[](?:-[a-z]*k[a-z]*|--insecure)(?:$|[\s;&|\]])"),
    (
        "tls_off",
        r"(?:^|[\s\[|])(?:--insecure|-insecure|--no-check-certificate|--insecure-skip-tls-verify|--no-verify-ssl|--trusted-host|--disable-tls-verification)(?:$|[\s=;&|\]])",
    ),
    ("tls_off", r"\bverify *= *false\b|\bverify_ssl *[=:] *false\b|\bssl_?verify *[=:]? *(?:false|0|none)\b"),
    ("tls_off", r"\bhttp\.sslverify(?: *=)? *false\b|\bstrict-ssl(?: *=| +)false\b"),
    (
        "tls_off",
        r#"\bnode_tls_reject_unauthorized *= *["']?0\b|\bgit_ssl_no_verify *= *["']?(?:1|true)\b|\bpythonhttpsverify *= *["']?0\b"#,
    ),
    (
        "tls_off",
        r"\brejectunauthorized *: *false\b|\binsecureskipverify *: *true\b|\binsecure_skip_verify *[=:] *true\b",
    ),
    (
        "tls_off",
        r"\b_create_unverified_context\b|\bcheck_hostname *= *false\b|\bcert_none\b|\bssl_verifypeer *, *(?:false|0)\b",
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
    // Data sent off the machine: the environment or history to a network command, a file by
    // netcat, a TCP device, secrets named in words with a destination.
    (
        "exfiltration",
        r"\b(?:env|printenv|history|set|export -p)\b *\| *(?:base64 *\| *)?(?:curl|wget|nc|ncat|netcat|socat)\b",
    ),
    ("exfiltration", r"\b(?:curl|wget)\b[^\n]*\$\( *(?:env|printenv|history|set|whoami|cat +/etc/passwd)\b"),
    ("exfiltration", r"\b(?:nc|ncat|netcat)\b +[^\n|;&]*\S+ +\d{2,5} *< *\S+"),
    ("exfiltration", r"\| *(?:nc|ncat|netcat) +[a-z0-9.-]+\.[a-z]{2,}[a-z0-9.-]* +\d{2,5}\b"),
    ("exfiltration", r"(?:>& *|[^<>]> *)/dev/tcp/|\b(?:nc|ncat|netcat)\b[^\n]* -e +\S+"),
    (
        "exfiltration",
        r"\b(?:send|post|upload|forward|exfiltrate|transmit|paste|submit|email|mail|share|leak)\b[^\n.;]{0,50}\b(?:secrets|credentials|private keys?|ssh keys?|env(?:ironment)? var(?:iable)?s|environment|cookies|\.env)\b[^\n.;]{0,50}\b(?:to|into|at)\b[^\n.;]{0,30}(?:https?://|\bwebhook|\bpastebin|\bgist|\burl\b|\bendpoint\b|\bkb_submit\b|\S+@\S+\.\S+)",
    ),
    (
        "exfiltration",
        r"\bkb_submit\b[^\n.]{0,40}\b(?:secrets?|tokens?|credentials?|api[ _-]?keys?|passwords?|private keys?|env(?:ironment)?(?: var(?:iable)?s)?)\b",
    ),
    (
        "exfiltration",
        r"(?:发送|发到|发给|上传|提交|贴到|传到)[^\n。；]{0,20}(?:环境变量|私钥|凭据|凭证|密钥|\.env|id_rsa|ssh)",
    ),
    (
        "exfiltration",
        r"(?:环境变量|私钥|凭据|凭证|密钥|\.env|id_rsa)[^\n。；不别勿]{0,20}(?:发送|发到|发给|上传|提交|贴到|传到)",
    ),
    // Destructive commands.
    (
        "destructive",
        r"\brm +(?:-[a-z]+ +|--[a-z-]+ +)*(?:-[a-z]*[rf][a-z]*|--recursive|--force)(?: +-[a-z-]+)* +{ROOTS}{END}",
    ),
    ("destructive", r"--no-preserve-root\b"),
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
    ("destructive", r"\bfind +/ [^\n]*-delete\b|\bformat +c:|\bdel +/[sfq][^\n]*c:\\"),
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
        r"\bforce[- ]push(?:ing|ed)?\b[^\n.;]{0,20}\b(?:main|master)\b|\bdrop (?:the )?(?:production|prod) (?:database|db)\b",
    ),
    (
        "destructive",
        r"(?:删除|删掉|清空|格式化|抹掉|擦除|干掉)[^\n。；]{0,10}(?:根目录|主目录|家目录|用户目录|硬盘|磁盘|整个数据库|生产库|生产数据库)",
    ),
    ("destructive", r"(?:强制推送|强推|force push)[^\n。；]{0,10}(?:main|master|主分支)"),
];

/// Words that, earlier in the same clause, turn a match into advice against it ("never use
/// `curl -k`", "instead of disabling TLS verification", "不要关闭证书校验").
pub(super) const NEGATIONS: &[&str] = &[
    "instead of",
    "rather than",
    "never",
    "don't",
    "dont",
    "do not",
    "avoid",
    "not",
    "no longer",
    "stop using",
    "shouldn't",
    "should not",
    "must not",
    "不要",
    "别",
    "禁止",
    "而不是",
    "不用",
    "避免",
    "切勿",
    "不能",
    "不应",
    "绝不",
    "千万不要",
    "不应该",
];

/// Words that undo a negation before them ("don't hesitate to", "never forget to", "不要犹豫").
pub(super) const NEGATION_UNDONE: &[&str] = &["hesitate", "forget", "fail", "bother", "worry", "犹豫", "忘", "担心"];

/// What a match of a class that contains one of these only names, harmlessly: example files
/// and public keys (`cp .env.example .env`, `cat id_ed25519.pub`), this machine (`| nc localhost 8125`).
pub(super) const EXCEPTIONS: &[(&str, &str)] = &[
    ("credential_read", r"\.env\.(?:example|sample|template|dist)\b"),
    ("credential_read", r"\.pub\b"),
    ("exfiltration", r"(?:\blocalhost|\b127\.0\.0\.1)(?:[:/\s]|$)"),
    ("destructive", r"of= *[\x22']?/dev/(?:null|zero|stdout|stderr|fd/|random|urandom)"),
    ("destructive", r"--no-act\b|--dry-run\b|用户的主目录|用户及其主目录|磁盘空间|空余的磁盘"),
];
