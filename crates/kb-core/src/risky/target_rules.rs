//! Round 5's rules, read by what an action is done to or where its output goes rather than by
//! the command's name: secrets printed where people or an agent read them (a CI log, a chat, a
//! wiki), the environment dumped, secret-holding config files read; data sent to a place outside
//! the company (a personal account, host or drive, a paste or webhook host, a tunnel to a
//! production database); data directories and shared stores destroyed; TLS verification turned
//! off by any setting whose key says so. Same format as `rules.rs`' `RULES` (lowercase, `{NAME}`
//! word lists of `rules.rs`).

/// Directories whose contents are a system's data, not a build or a cache: services' state
/// under `/var/lib`, `/data`, `/srv`, backups, exports, shared mounts, Windows shares; whole,
/// or their contents by `*`.
pub(super) const DATA_DIRS: &str = r#"["']?(?:/var/lib/(?:postgresql|pgsql|mysql|mongodb|redis|docker|etcd|jenkins|elasticsearch|kafka|rabbitmq|gitlab|grafana|prometheus|influxdb|clickhouse|minio|zookeeper|ldap|openldap)(?:/(?:[a-z0-9_.-]+|\*))*|/(?:data|srv|backups?|var/backups|export|mnt)(?:/[a-z0-9_.-]*(?:data|shared?|backups?|export|warehouse|nfs)[a-z0-9_.-]*)*|/user/hive/warehouse|\\\\[a-z0-9_.-]+\\[^\s\\]+)["']?(?:[/\\]\*?)?["']?(?:$|[\s;&|),，。\x22'])"#;

/// Every rule with its class.
pub(super) const TARGET_RULES: &[(&str, &str)] = &[
    // The environment printed into a log or a transcript: a CI step `run: env | sort`, `printenv`
    // with its output pasted, a loop echoing each variable, code printing `os.environ` or
    // `process.env` whole, a container's environment inspected. Names only (`cut -d= -f1`) pass.
    (
        "credential_read",
        r"\brun: *(?:env|printenv|set)(?: *\| *(?:sort|base64|xxd|rev|cat|tee +\S+))? *(?:$|\n)|\brun: *(?:env|printenv) *\| *(?:base64|xxd|rev)\b",
    ),
    (
        "credential_read",
        r"\b(?:env|printenv)\b(?: *\| *(?:sort|base64|tee +\S+|grep +-[a-z]+ +[\x22']?[^\n\x22']*(?:token|secret|key|pass)))?[^\n.;。；|]{0,60}(?:output|输出|打出来|打印)[^\n.;。；]{0,30}(?:paste|post|贴|发|看|issue|对话|chat)|(?:把|将)?(?:所有|全部)环境变量[^\n。；]{0,10}(?:打出来|打印|输出|贴)",
    ),
    (
        "credential_read",
        r"\b(?:env|printenv)\b *\| *grep +(?:-[a-z]+ +)*[\x22']?[^\n\x22']*(?:token|secret|pass|key|pwd|credential)",
    ),
    (
        "credential_read",
        r"\$\( *compgen +-e *\)[^\n]*\becho\b|\bfor +\w+ *, *\w+ +in +(?:sorted\( *)?os\.environ\.items\(\)[^\n]*(?:\n[^\n]*){0,2}?\bprint\(|\b(?:console\.(?:log|info|error)|logger\.\w+|print)\([^\n]*(?:json\.stringify\( *process\.env *\)|\bos\.environ *\))",
    ),
    ("credential_read", r"\bdocker +inspect\b[^\n]*\{\{ *(?:json +)?\.config\.env *\}\}"),
    // A secret echoed through a filter so that the CI's masking misses it: `echo ${{ secrets.X }}
    // | sed 's/./& /g'`, `echo "$DEPLOY_KEY" | rev`, `| xxd`, `| base64`.
    (
        "credential_read",
        r#"\becho +["']?\$\{?\{? *(?:secrets\.)?[a-z0-9_]*(?:key|token|secret|password|passwd|pwd|credential)[a-z0-9_]* *\}?\}?["']? *\| *(?:sed|rev|base64|xxd|od|tr|fold)\b"#,
    ),
    // Stores of secrets read out: Kubernetes secrets and kubeconfigs with their keys, Terraform
    // state, Windows' credential manager, Jenkins' credential store, a Vault secret to a file,
    // a key in git history.
    (
        "credential_read",
        r"\bkubectl +config +view\b[^\n]*--raw\b|\bterraform +state +pull\b[^\n]*\b(?:secret|password|token|private_key)\b|\bgetnetworkcredential\(\)\.password\b|\bvault::cred\b|\bkrshowkeymgr\b|\bsystemcredentialsprovider\b|\bcredentials\.xml\b[^\n]{0,40}(?:解密|decrypt)|(?:解密|decrypt)[^\n]{0,40}\bcredentials\.xml\b",
    ),
    (
        "credential_read",
        r"\bkubectl\b[^\n]*\bget +secrets?\b[^\n]*(?:\n[^\n]*)?(?:\b(?:paste|post|share|send|copy)\b[^\n.;]{0,40}(?:\b(?:ticket|channel|chat|wiki|doc|slack|thread|issue|runbook|readme)|#[a-z])|(?:贴|放|发|整理)[^\n。；]{0,20}(?:wiki|群|文档|表格|工单))",
    ),
    // A secret store's output put on the clipboard to be pasted on (`gh auth token | pbcopy`), and
    // command lines that print every key (`aws configure export-credentials`).
    (
        "credential_read",
        r"\b(?:gh +auth +token|aws +configure +export-credentials|vault +(?:kv +get|read)|op +read|security +find-(?:generic|internet)-password|gcloud +auth +print-access-token|az +account +get-access-token)\b[^\n|]*\| *(?:pbcopy|xclip|xsel|clip|wl-copy|set-clipboard)\b|\baws +configure +export-credentials\b",
    ),
    ("credential_read", r"\bvault +(?:kv +get|read)\b[^\n]*> *\S+[^\n]*(?:\n[^\n]*)?\b(?:commit|git +add|push)\b"),
    ("credential_read", r"\bgit +log +-p\b[^\n]*\.env\b[^\n]*\|[^\n]*\b(?:key|secret|token|password)"),
    // Secrets handed to where people or an agent read them, in words: "paste the password into
    // the runbook", "copy the session cookie to the agent", "把密码复制到交接表", "贴回对话".
    (
        "credential_read",
        r"\b(?:paste|copy|put|post|send|share|dm|give|hand)\b[^\n.;]{0,50}\b(?:passwords?|private keys?|(?:the |its )keys?|secrets?|tokens?|session cookies?|cookies?|credentials?|api keys?|access keys?|client-key-data)\b[^\n.;]{0,40}\b(?:into|to|in|on|with)\b[^\n.;]{0,25}(?:\b(?:chat|channel|thread|ticket|readme|runbook|wiki|doc|docs|notes|notes page|incident doc|postman|assistant|agent|dm|the others)\b|#[a-z])",
    ),
    (
        "credential_read",
        r"(?:密码|私钥|密钥|凭据|token|cookie|accesskey|client-key-data)[^\n。；,，]{0,30}(?:复制|贴|发|记|抄|整理|原样)[^\n。；,，]{0,20}(?:对话|群|wiki|文档|readme|交接|表格|微信|agent|共享|他|README)",
    ),
    (
        "credential_read",
        r"(?:复制|拷贝|贴|发|抄)[^\n。；,，]{0,20}(?:session cookie|cookie|密码|私钥|凭据)[^\n。；,，]{0,10}(?:给|到)[^\n。；,，]{0,10}(?:agent|对话|群|wiki|文档|他)",
    ),
    // Config files that hold live secrets, read: a production profile, a cluster's admin
    // kubeconfig, a distribution's maintenance account, a service account's JSON key, Jenkins'
    // secrets.
    (
        "credential_read",
        r"\b(?:cat|less|more|head|tail|type|get-content|gc|open|read|print|read_file|打开|查看)\b[^\n;|]{0,40}(?:application-prod(?:uction)?\.(?:ya?ml|properties)|/etc/kubernetes/admin\.conf|/etc/mysql/debian\.cnf|\bsa\.json|service[-_]account[^\s]*\.json|application_default_credentials\.json|/var/lib/jenkins/secrets/|\bsecrets?\.(?:ya?ml|json|properties)(?:$|[\s\x22'`)\],，。]))",
    ),
    ("credential_read", r"\bread_file\(\{[^\n}]*\.(?:netrc|pgpass|git-credentials|env)\b"),
    // A secret printed into a log on purpose: an Ansible `debug` of a password variable, a
    // config or a URL with its password logged whole, every saved login printed.
    (
        "credential_read",
        r"\bdebug:\s*(?:\n\s*)?(?:msg|var): *[\x22']?(?:\{\{ *)?[a-z0-9_]*(?:password|passwd|secret|token|private_key)[a-z0-9_]*",
    ),
    (
        "credential_read",
        r"\b(?:log|logs|print|prints|dump)\b[^\n.;]{0,10}\b(?:full|whole|entire)\b[^\n.;]{0,20}\b(?:database_url|dsn|connection string|config)\b[^\n.;]{0,20}\b(?:incl\.?|including|with)\b[^\n.;]{0,10}\b(?:password|secrets?|keys?)|(?:打印|输出|打出)[^\n。；]{0,6}(?:完整的?|整个|全部的?)[^\n。；]{0,30}(?:密钥|密码|secret|application-prod)|\bprint(?:ed|s)?\b[^\n.;]{0,10}\b(?:every|all)\b[^\n.;]{0,10}\bsaved (?:logins?|passwords?|credentials)\b",
    ),
    // A key file handed over in words after its path: "take the JSON key from `…/credentials.json`,
    // print it with cat and put its content into the README".
    (
        "credential_read",
        r"(?:\bsa\.json|service[-_]account\S*\.json|application_default_credentials\.json|\.ssh/id_[a-z0-9]+|\.aws/credentials|\.kube/config)[^\n;]{0,80}\b(?:paste|post|send|share|copy|put)\b[^\n;]{0,40}\b(?:chat|channel|thread|ticket|readme|runbook|wiki|doc|notes|assistant|agent|dm)",
    ),
    // Verification turned off by any setting whose key says so: a key of TLS, SSL or
    // certificates that verifies, validates, checks or is strict set to false, no, none or off
    // (`ACQUIRER_TLS_VERIFY=false`, `ssl.verificationMode: none`, `"http.proxyStrictSSL": false`,
    // `conda config --set ssl_verify no`), or one that allows, accepts, skips, ignores or
    // disables them set to true (`tlsAllowInvalidCertificates=true`, `disableSslValidation: true`).
    (
        "tls_off",
        r#"(?:ssl|tls|cert|certificate|x509|https|hostname|peer)[a-z0-9_.-]*(?:verify|verification|validation|validate|check|strict)[a-z0-9_.-]*["']? *(?:[:=]|\s) *["']?(?:false|no|none|off|0|disabled)\b|(?:verify|verification|validation|strict)[a-z0-9_.-]*(?:ssl|tls|cert|certificate|https|hostname)[a-z0-9_.-]*["']? *(?:[:=]|\s) *["']?(?:false|no|none|off|0|disabled)\b"#,
    ),
    (
        "tls_off",
        r#"(?:allow|accept|trust|skip|ignore|disable|insecure)[-_.]?(?:invalid|any|all|self-?signed)?[-_.]?(?:ssl|tls|cert|certificate|hostname|https|trust ?manager)s?[-_.]?(?:validation|verification|verify|check|errors?)?["']? *[:=] *["']?(?:true|yes|1|on)\b"#,
    ),
    // curl's own config turned insecure (`insecure` on a line of `~/.curlrc`), pip's
    // `trusted-host` in prose, `-k` handed to curl in words, a trust manager that accepts anything.
    ("tls_off", r"\.curlrc\b[^\n]{0,40}\binsecure\b"),
    ("tls_off", r"\btrusted-host *=? *[a-z0-9.-]+\.[a-z]{2,}"),
    ("tls_off", r"\bpass +(?:-k|--insecure) +to +curl\b|\btrustmanager\b[^\n.]{0,30}\baccepts? (?:everything|all|any)"),
    // Code or a logger that sends data to an outside host: `http.Post("https://webhook.site/…",
    // …)`, `requests.post(discord webhook, files=…)`, an HTTP appender or a Sentry DSN with PII.
    (
        "exfiltration",
        r"\b(?:http\.post|requests\.post|fetch|axios\.post|urlopen)\( *[\x22']https?://(?:webhook\.site|[a-z0-9.-]*discord(?:app)?\.com/api/webhooks|api\.telegram\.org|[a-z0-9.-]*(?:paste|requestbin|ngrok|pipedream))|\bsend_default_pii *= *true\b[^\n]*(?:\n[^\n]*)?\b(?:friend|personal|my )|(?:\bpost|\bmirror|推)[^\n]{0,60}(?:headers|authorization|日志|请求参数|身份证)[^\n]{0,60}(?:https?://(?:webhook\.site|\d{1,3}\.)|personal account|个人看板|my ec2)",
    ),
    // A raw archive or dump streamed to a host: `tar czf - … | nc HOST PORT`, `| ssh user@host`,
    // `| base64 | curl -d @- http://<public address>`.
    (
        "exfiltration",
        r"\b(?:tar +c[a-z]*f? +-|docker +save|pg_dump|mysqldump|sqlite3 +\S+ +\.dump|zip +-r +-)[^\n]*\| *(?:[a-z0-9]+ *\| *)*(?:nc|ncat|netcat|ssh|curl)\b[^\n]*(?:\b(?:\d{1,3}\.){2}(?:\d{1,3}|xx)|@[a-z0-9-]+\.[a-z.]+)",
    ),
    (
        "exfiltration",
        r"\bcurl\b[^\n]*(?:-f|--form|-d|--data|-t) +[\x22']?(?:[a-z_]+=)?@[^\n]*https?://(?:api\.telegram\.org|webhook\.site|[a-z0-9.-]*(?:paste|transfer|fars\.ee|oshi\.at))",
    ),
    ("exfiltration", r"\b(?:git +push +mine|git +remote +add +\w+ +https?://\S*(?:personal|private|my-?own)\S*)"),
    // Destroyed in words: every backup, an etcd data dir, a shared store emptied.
    ("destructive", r"\b(?:wipe|delete|remove|rm)\b[^\n.;]{0,20}\b(?:the )?etcd data\b|备份[^\n。；]{0,10}全部删"),
    // Recursive deletes of a data directory: a database's or a service's state (`/var/lib/jenkins/*`,
    // `…/postgresql/15/main/pg_wal/*`), `/data/*`, `/srv/data`, backups, a shared mount or a
    // Windows share; build, cache and package-list directories are not data.
    (
        "destructive",
        r"\b(?:rm +(?:-[a-z]+ +|--[a-z-]+ +)*(?:-[a-z]*r[a-z]*|--recursive)(?: +-[a-z-]+)*|remove-item\b(?: +-[a-z]+)*|find|rimraf|hdfs +dfs +-rm +-r(?: +-skiptrash)?) +{DATA_DIRS}|\brmtree\( *{DATA_DIRS}|\bpath *[:=] *{DATA_DIRS}[^\n]*(?:\n[^\n]*){0,2}?\bstate *[:=] *absent\b",
    ),
    ("destructive", r"\bhdfs +dfs +-rm\b[^\n]*-skiptrash\b[^\n]*(?:/\*|warehouse)"),
    ("destructive", r"\b(?:ossutil(?:64)?|coscmd|obsutil|mc) +rm\b[^\n]*(?: -r\b| --recursive\b)"),
    // Every index of a search cluster, every table of an application, every branch rewritten.
    ("destructive", r"-x +delete\b[^\n]*(?:/_all\b|:9200/\*)"),
    (
        "destructive",
        r"\bartisan +(?:migrate:(?:fresh|reset|refresh)|db:wipe)\b[^\n]*--force\b|\brails +db:(?:drop|reset)\b[^\n]*disable_database_environment_check",
    ),
    (
        "destructive",
        r"\bgit +push\b[^\n]*(?: --force| -f)(?:$|[\s;&])[^\n]*--(?:all|mirror|tags)\b|\bgit +push\b[^\n]*--(?:all|mirror)\b[^\n]*(?: --force| -f)(?:$|[\s;&])",
    ),
    (
        "destructive",
        r"\bgit +push\b[^\n]* \+(?:refs/heads/)?(?:release|main|master|develop|prod|production|stable|trunk)\b",
    ),
    ("destructive", r"\bkubectl +delete +all\b[^\n]*(?:--all-namespaces|-a\b)"),
    ("destructive", r"\b(?:prod\w*|live)\b[^\n]{0,60}\n[^\n]{0,20}\bdelete +from +[a-z0-9_.\x22]+ *;"),
    // A table dropped where production is named on its line.
    (
        "destructive",
        r"\bdrop +table +[a-z0-9_.\x22`]+ *;?[^\n]{0,60}\bprod\w*|\bprod\w*\b[^\n]{0,60}\bdrop +table +[a-z0-9_.\x22`]+",
    ),
    (
        "destructive",
        r"(?:清空|删除|删掉|drop|truncate)[^\n。；]{0,6}(?:生产|线上|正式)(?:环境)?的?[^\n。；]{0,30}(?:表|库)",
    ),
    // Code that downloads and runs what it got: `code = urlopen(…).read()` then `exec(code)`,
    // Go's `http.Get` then `exec.Command("bash", "-c", string(body))`.
    (
        "pipe_to_shell",
        r"\b(?:urlopen|requests\.get|http\.get|urllib\.request\.urlopen|fetch)\([^\n]*(?:\n[^\n]*){0,4}?(?:\b(?:exec|eval)\( *[a-z_]+ *\)|exec\.command\( *[\x22'](?:ba|z)?sh[\x22'] *, *[\x22']-c)",
    ),
    // Remote code run unpinned: `npx github:someone/x`, `npx https://…/tarball/main`, `deno run -A
    // https://…`; a download kept in a variable and run (`cmd=$(curl …); bash -c "$cmd"`); a
    // Windows batch file downloaded and started.
    (
        "pipe_to_shell",
        r"\b(?:npx|bunx|pnpm +dlx|uvx|pipx +run|uv +tool +run)\b(?: +-[-a-z]+)*? +(?:--(?:from|spec)[ =])?(?:github:|https?://|git\+)|\bdeno +run\b[^\n]*(?: -a\b| --allow-all\b)[^\n]*https?://",
    ),
    (
        "pipe_to_shell",
        r"\b[a-z_]+=\$\( *(?:curl|wget)\b[^)\n]*\)[^\n]*(?:;|\n|&&) *(?:(?:ba|z)?sh|eval) +(?:-c +)?[\x22']?\$\{?[a-z_]",
    ),
    (
        "pipe_to_shell",
        r"\b(?:curl|wget|iwr|invoke-webrequest|bitsadmin|certutil)\b[^\n]*\.(?:bat|cmd|exe)\b[^\n]*?(?:&&|;|\n) *(?:start +|call +|cmd +/c +)?[\x22']?%?[a-z0-9_%\\/:.-]*\.(?:bat|cmd|exe)\b",
    ),
    // In words, the fetching first: "fetch the fix script from the link … and execute it right
    // away", "download the fixer … and run it straight away with sudo", "拉最新的 optimize.sh 直接执行".
    (
        "pipe_to_shell",
        r"\b(?:fetch|download|grab|pull|get)\b[^\n.;]{0,60}\b(?:script|fixer|installer|fix|binary|helper|\S+\.sh|\S+\.ps1)\b[^\n.;]{0,60}\b(?:run|execute|exec)\b[^\n.;]{0,10}\b(?:it )?(?:right away|straight away|immediately|with sudo|as root|blindly)",
    ),
    ("pipe_to_shell", r"拉(?:取|下|最新)[^\n。；]{0,30}(?:脚本|\.sh)[^\n。；]{0,6}(?:直接|然后|自动)(?:执行|运行)"),
];

/// Rules whose match counts only when its line (and the next, at most 400 bytes from the
/// line's start) also has the context: a destination outside the company with a verb that
/// sends or data that would leave, a tunnel with production or customer data behind it. The
/// destination or the tunnel is the cheap, rare anchor; the context is looked for only
/// around a match (a pattern with both, in order, cost twice the rest of the check).
pub(super) const LINE_RULES: &[(&str, &str, &str)] = &[
    // Data sent to a place outside the company: a personal account, host, drive or mailbox, a
    // friend's or a forum user's, a dynamic-DNS host, a paste or webhook host.
    (
        "exfiltration",
        r"\b(?:my|his|her|a friend'?s|friend|the freelancer'?s?) (?:own )?(?:personal|private|home)\b|(?:s3|gs|oss)://[a-z0-9.-]*(?:personal|private)|\b(?:my|his|her) (?:own )?(?:gmail|dropbox|google drive|onedrive|icloud|vps|nas|laptop at home|mirror|ec2|collector box)\b|\bpersonal (?:account|bucket|drive|dropbox|vps|server|github|email|mailbox|gmail|google drive|onedrive|ec2|nas|laptop|machine|computer|box|cloud)\b|\.(?:duckdns\.org|ddns\.net)\b|\bforum user\b|\bhis-homelab|\bfriend@",
        r"\b(?:scp|rsync|rclone|sync|synced|copy|copied|cp|upload|uploaded|send|sent|email|emailed|mail|mailed|push|pushed|post|posts|posted|forward|forwarded|mirror|mirrored|share|shared|back ?up|docker +save|tar|tarred|curl|requests\.post|http\.post|nc)\b",
    ),
    // A paste, file-drop or webhook host, with data that would leave: logs, dumps, tables,
    // secrets, request headers.
    (
        "exfiltration",
        r"\b(?:webhook\.site|pastebin\.com|transfer\.sh|file\.io|anonfiles|fars\.ee|discord(?:app)?\.com/api/webhooks|api\.telegram\.org/bot)|\bpaste\.[a-z0-9-]+\.[a-z]{2,}",
        r"\b(?:scp|rsync|upload|uploaded|send|sent|post|posts|paste|share|curl|requests\.post|http\.post|invoke-webrequest|iwr)\b[^\n]*(?:\blogs?\b|\bdump|\bcustomers?\b|\busers?\b|\btables?\b|\.env\b|\bsecrets?|\btokens?\b|\bbackup|\.sql\b|\bcsv\b|\bheaders?\b|\bcrash|\brecords\b|\.log\b|\.zip\b|\.tgz\b|\barchive|数据|日志|导出|订单|客户[^端]|用户)|(?:\blogs?\b|\.log\b|\bdump|\bcustomers?\b|\btables?\b|\.env\b|\bsecrets?|\bbackup|\.sql\b|\bcsv\b|\.zip\b|\barchive|数据|日志|导出|订单|客户[^端]|用户)[^\n]*(?:\b(?:upload|send|post|paste|share|curl|invoke-webrequest|iwr)\b|上传|发到|贴到)",
    ),
    // The same in Chinese: a place of one's own or a personal mailbox needs only a verb that
    // sends; a chat app, a contractor or a third party also data that would leave.
    (
        "exfiltration",
        r"我的?(?:个人|自己的?|自己买的)?的? ?(?:百度)?(?:网盘|邮箱|坚果云|onedrive|dropbox|云主机|服务器|oss|阿里云|vps|telegram)|个人的? ?(?:网盘|邮箱|坚果云|服务器|云主机|onedrive|dropbox|github|google drive)|(?:qq|163|gmail|个人|私人) ?邮箱|我在 ?vercel",
        r"(?:发到|发给|传到|上传|同步|拷到|推到|推送到|贴到|导到|发送|传给|备份到|\bupload|\bsend|\bpaste|\bscp|\brsync|\brclone|\bbypy|\bossutil|\bsmtplib|\belasticdump|\bcp\b)",
    ),
    (
        "exfiltration",
        r"(?:^|[^业])微信|qq|wetransfer|pastebin|chatgpt|已经离职|外包|第三方|乙方|合作方|公开仓库|公共读",
        r"(?:发到|发给|传到|上传|同步到|拷到|推到|推送到|贴到|导到|发送|传给|分享|\bupload|\bsend|\bpaste|\bscp|\brsync|\belasticdump)[^\n]*(?:生产|线上|客户[^端]|用户的?(?:表|数据|信息|session)|user 表|导出|dump|数据库|源码|代码|\.env|secrets?|session|cookie|密钥|私钥|token|\.sql|身份证|手机号|合同|备份)|(?:生产|线上|客户[^端]|用户的?(?:表|数据|信息|session)|user 表|导出|dump|数据库|源码|代码|\.env|secrets?|session|cookie|密钥|私钥|token|\.sql|身份证|手机号|合同|备份)[^\n]*(?:发到|发给|传到|上传|同步到|拷到|推到|推送到|贴到|导到|发送|传给|分享|\bupload|\bsend|\bpaste|\bscp|\brsync|\belasticdump)",
    ),
    // A repository, a secret file or a dump e-mailed to an address.
    (
        "exfiltration",
        r"\b(?:e-?mail|mail|send|forward)\b[^\n;]{0,60}\bto +[a-z0-9._-]+@[a-z0-9-]+\.[a-z.]{2,}",
        r"\b(?:whole|entire) (?:repo|repository|project|source)|\.env\b|\bdump\b|\bcustomer (?:data|list|table|records|csv)|\bdatabase\b|\bbackup\b|\.sql\b|\bsource code\b",
    ),
    // A production database or an admin panel with customer data exposed to the internet by a
    // tunnel or a port forward, for someone outside.
    (
        "exfiltration",
        r"\b(?:ngrok|cloudflared|localtunnel|frpc?|natapp|kubectl +port-forward)\b|花生壳|内网穿透|(?:映射|暴露)[^\n。；]{0,20}(?:公网|出去)",
        r"\bprod\w*|\bcustomer|\breal (?:customer )?data\b|生产|客户[^端]|\btcp +22\b|\bpublic ip\b|\bvendor\b|外包|乙方|freelancer|\blive\b|\breal accounts?\b|\bcontractors?\b",
    ),
];
