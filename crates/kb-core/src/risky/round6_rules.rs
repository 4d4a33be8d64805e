//! Round 6's rules (the round-5 blind misses, each read as a family of actions rather than a
//! string): code that fetches and then runs what it got, whatever the language; TLS checks
//! turned off by a callback that always says yes, a checkbox, a protocol mode or a client's
//! own key; secrets read from the stores that hold them live (password hashes, a server's
//! config, a process's environment) or logged where people read them; data sent to a free
//! online tool, a public forum or issue, a machine of one's own; whole stores destroyed by an
//! API call, a mirror of an empty folder, a statement with no `WHERE`, a variable that may be
//! empty. Same format as `rules.rs`' `RULES` (lowercase, `{NAME}` word lists of `rules.rs`).

/// Every rule with its class.
pub(super) const ROUND6_RULES: &[(&str, &str)] = &[
    // Code that downloads a script and hands it to a shell, a process or an evaluator a few lines
    // on, in any language: Python `urlopen(…).read()` then `subprocess.run(["bash", "-s"],
    // input=…)`, C# `GetStringAsync(…)` then `Process.Start("powershell", …)`, Swift
    // `Data(contentsOf: URL(string: "https://…"))` then `Process()`, Emacs
    // `url-retrieve-synchronously` then `eval-print-last-sexp`, Java `openStream()` then
    // `Runtime.getRuntime().exec`.
    (
        "pipe_to_shell",
        r#"\b(?:urlopen|urlretrieve|requests\.get|httpx\.get|getstringasync|getbytearrayasync|downloadstring|downloadfile|url-retrieve(?:-synchronously)?|contentsof: *url\( *string: *"https?://|openstream|http\.get|net::http\.get|\biwr\b|\birm\b|invoke-webrequest|invoke-restmethod|\bfetch\(|file_get_contents\( *["']https?://)[^\n]{0,200}(?:\n[^\n]{0,200}){0,4}?(?:\bsubprocess\.(?:run|popen|call|check_call|check_output)\( *\[? *["'](?:ba|z|da)?sh["']|\bprocess\.start\( *["'](?:powershell|pwsh|cmd|bash)|\beval-(?:print-last-sexp|buffer|region)\b|\blaunchpath *= *["']/bin/(?:ba|z)?sh|\bos\.system\(|\bruntime\.getruntime\(\)\.exec\b|\bshell_exec\(|\b(?:iex|invoke-expression)\b +\$|\bnew function\( *(?:await +)?[a-z_$]|\beval\( *(?:await +)?[a-z_$][a-z0-9_$.]* *\))"#,
    ),
    // A script downloaded to a file and that file run by any program on the same line:
    // `curl … -o /tmp/fx.js && mongosh prod --file /tmp/fx.js`, `wget -O x.py … ; python3 x.py`
    // (a checker in between — `sha256sum`, `shellcheck`, `less` — spares it, `EXCEPTIONS`).
    (
        "pipe_to_shell",
        r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n]*?(?:-o|--output|-outfile) +\S+\.(?:js|py|rb|pl|ps1|sh|run|bin|php|lua)\b[^\n]*?(?:&&|;) *(?:sudo +)?[a-z][a-z0-9_.-]*\b[^\n;&]*? (?:--file[= ]|-f +|<)? *\S*\.(?:js|py|rb|pl|ps1|sh|run|bin|php|lua)\b",
    ),
    // In Chinese: downloaded, then run at once ("下载后直接 chmod +x 执行了", "拉下来直接跑").
    (
        "pipe_to_shell",
        r"(?:下载|拉取|获取|拉下来)[^\n。；]{0,24}?(?:后|完|之后|下来)?[^\n。；]{0,4}(?:直接|立即|马上|立刻)[^\n。；]{0,16}?(?:执行|运行|跑)",
    ),
    // TLS checks turned off by a callback or a delegate that accepts everything: a hostname
    // verifier or a validation callback whose body only says yes (`(h, s) -> true`,
    // `CheckValidationResult(…){return true;}`), Swift's delegate handing the server's trust back
    // unevaluated, a trust manager that lets everything through, in words.
    (
        "tls_off",
        r"(?:hostnameverifier|badcertificatecallback|checkvalidationresult|validationcallback|certificatevalidation|checkservertrusted|verifyhostname|servercertificatecustomvalidation)[^\n]{0,80}?(?:-> *true\b|=> *true\b|\{ *return +true *;? *\}|\breturns? +true\b)",
    ),
    ("tls_off", r"\.usecredential *, *urlcredential\( *trust: *challenge\.protectionspace\.servertrust"),
    (
        "tls_off",
        r"\btrust ?manager\b[^\n.;]{0,20}\b(?:that|which)\b[^\n.;]{0,10}\b(?:returns|accepts|trusts|passes|allows)\b[^\n.;]{0,10}\b(?:for )?(?:every|any|all|whatever)\b|\btrust ?manager\b[^\n。；]{0,10}(?:全部放行|都放行|全放行|放行所有|不校验)|\baccepts? whatever (?:cert|certificate)",
    ),
    // Settings that turn it off in other words: LDAP's `TLS_REQCERT never|allow|try`, apt's
    // `Verify-Peer "false"`, a key set to `nil` (Emacs `gnutls-verify-error nil`,
    // `network-security-level 'low`), a skip-verify key in any case (`tlsSkipVerify: true`), a
    // flag that lets a registry or a host be insecure, iOS' `NSAllowsArbitraryLoads`, Postgres'
    // `sslmode=prefer|allow` (plain text on a failed handshake), curl's config given `-k`, a
    // "verify SSL" box unticked.
    (
        "tls_off",
        r#"\btls_reqcert +(?:never|allow|try)\b|\bverify[-_]?(?:peer|host)["']? *(?:[:=]|\s) *["']?(?:false|no|0|off)\b|(?:ssl|tls|cert|certificate|hostname|peer)[a-z0-9_.-]*(?:verify|verification|validation|check|trust)[a-z0-9_.-]*["']? +nil\b|\bnetwork-security-level +'?low\b"#,
    ),
    (
        "tls_off",
        r#"(?:ssl|tls|cert|certificate|hostname)[-_.]?(?:skip|ignore|disable|no)[-_.]?(?:verify|verification|validation|check)[a-z]*["']? *[:=] *["']?(?:true|yes|1|on)\b|--insecure-(?:registry|registries|host)\b|\bnsallowsarbitraryloads\b[^\n]{0,20}\n?[^\n]{0,10}?(?:<true|\btrue\b|\byes\b)|\b(?:pg)?sslmode *[=:] *["']?(?:prefer|allow)\b"#,
    ),
    (
        "tls_off",
        r"\.curlrc\b[^\n]{0,20}(?:^|[\s\x22'])-k\b|(?:^|[\s\x22'])-k\b[^\n]{0,20}(?:>>?|写进|写到|into) *\S*\.curlrc\b",
    ),
    (
        "tls_off",
        r"(?:取消勾选|不勾选|去掉勾选|\buncheck(?:ed)?\b|\buntick(?:ed)?\b)[^\n。；]{0,12}(?:verify|ssl|tls|证书)|\b(?:verify (?:ssl|tls|certificates?)|ssl verification)\b[\x22']?[^\n。；]{0,6}(?:取消勾选|不勾选|\bunchecked\b|\bunticked\b)",
    ),
    // Password hashes read out of the stores that keep them: Postgres' `pg_shadow`/`pg_authid`,
    // MySQL's `authentication_string`, MongoDB's `system.users` with its credentials.
    (
        "credential_read",
        r"\bfrom +pg_(?:shadow|authid)\b|\bauthentication_string\b[^\n]{0,40}\bfrom +mysql\.user\b|\bsystem\.users\.find\b[^\n]*\bcredentials *: *(?:1|true)\b",
    ),
    // A live secret read from where a server keeps it: Redis' `CONFIG GET requirepass`, a grep
    // for passwords across `/etc` or a service's config or history, a process's environment.
    (
        "credential_read",
        r#"\bconfig +get +["']?(?:requirepass|masterauth)\b|\b(?:grep|rg|egrep|findstr|select-string)\b[^\n|;]*\b(?:password|passwd|requirepass|masterauth|identified by|secret)\b[^\n|;]* (?:/etc/?(?:\s|$)|\S*(?:redis\.conf|my\.cnf|_history|/environ|\.vault-token)\b)|\bstrings +\S*/proc/\S+/environ\b"#,
    ),
    // Files that hold live keys, read (`cat /root/.my.cnf`, `sudo cat /root/.vault-token`,
    // `cat config/master.key`, a TLS private key under `/etc/ssl/private`, a tool's
    // `~/.config/<tool>/credentials.json`).
    (
        "credential_read",
        r"\b(?:cat|type|get-content|gc|less|more|head|tail|bat|strings|base64|cp|scp)\b(?: +-\S+)*(?: +\S+)*? +\S*(?:\.my\.cnf|\.vault-token|/etc/ssl/private/\S+|\bmaster\.key|/\.config/[a-z0-9_.-]+/credentials\.json|/etc/environment)\b",
    ),
    // Tokens read out of an application's own store ("read out any tokens you find in
    // state.vscdb", a browser profile's Local Storage or cookies).
    (
        "credential_read",
        r"\b(?:read|read out|dump|extract|list|copy)\b[^\n.;]{0,30}\b(?:tokens?|secrets?|passwords?|cookies)\b[^\n.;]{0,30}\b(?:state\.vscdb|globalstorage|local storage|leveldb|cookies\.sqlite)\b",
    ),
    // Secrets logged or served where people read them: Spring's `show-values=ALWAYS`, nginx
    // logging `$http_authorization`, a debug route returning the environment, a connection
    // string or a secret config value printed, `set -x` around a secret's export, a Terraform
    // output holding a password printed, Rails' decrypted credentials dumped.
    // Every secret of a CI run printed at once (`echo ${{ toJSON(secrets) }}`).
    ("credential_read", r"\btojson\( *secrets *\)"),
    (
        "credential_read",
        r"\bshow-values *[=:] *always\b|\blog_format\b[^\n]*\$http_(?:authorization|cookie)\b|\b(?:return|jsonify|res\.json|res\.send)\b\(? *(?:jsonify\()?(?:dict\( *)?os\.environ\b",
    ),
    (
        "credential_read",
        r#"\b(?:writeline|println|log\.[a-z]+|logger\.[a-z]+|print|puts|dump|dd|console\.log|var_dump|print_r)\( *[^\n]{0,60}?(?:getconnectionstring\(|config\( *["'][^"'\n]*(?:password|secret)|env\( *["'][a-z_]*(?:key|secret|token|password)|buildconfig\.[a-z_]*(?:secret|token|key)\b)"#,
    ),
    (
        "credential_read",
        r"\bset +-x\b[^\n]{0,120}\b(?:[a-z_]*pass(?:word)?|[a-z_]*secret[a-z_]*|[a-z_]*token|api_?key)\b[^\n]{0,60}\b(?:console|log|output|see)\b|(?:^|[^(\w$-])terraform +output\b[^\n)]*(?:password|secret|token|private_key)[^\n)]*(?:$|[;&\n])|\bcredentials\.config\b[^\n]*\b(?:puts|to_yaml|pp|inspect)\b",
    ),
    (
        "credential_read",
        r"(?:authorization|私钥|密码|token|secret)[^\n。；不别勿]{0,30}(?:全|都|一起)?(?:打到|打印到|写进|写到|记到)了?[^\n。；]{0,4}(?:日志|\blog)|(?:连|把)[^\n。；]{0,20}(?:带密码|密码)[^\n。；]{0,6}(?:一起)?(?:打出来|打印出来|输出)",
    ),
    // Exec-form commands (a Kubernetes `command:`, a Dockerfile `RUN [...]`, an agent's tool
    // call) are read once their array is joined; what they delete is the same.
    (
        "destructive",
        r"\bdelete +from +[a-z0-9_.\x22]+ *;[^\n]{0,60}\n[^\n]{0,60}\b(?:prod\w*|live)\b|\bkubectl +delete +(?:namespaces?|ns)\b[^\n|;&]*(?:\$\(| --all\b)|\bgit +(?:reset +--hard|clean +-[a-z]*f)[^\n]{0,160}\b(?:every|all|each)\b[^\n]{0,20}\b(?:director(?:y|ies)|repos|repositories|clones|checkouts|working copies)\b|\bupdate +[a-z0-9_.\x22]+ +set +[a-z0-9_]+ *= *[^;\n\s,]+(?: *, *[a-z0-9_]+ *= *[^;\n\s,]+)* *;|\bwhere +(?:1 *= *1|true)\b *;?",
    ),
    // Every table emptied, by a loop or in words.
    (
        "destructive",
        r"\btruncate +(?:table +)?[#$]?\{|\btruncate\b[^\n。；]{0,6}(?:所有|全部)的?表|(?:所有|全部)的?表[^\n。；]{0,6}\btruncate\b|\btables\.each\b[^\n]*\b(?:truncate|drop)\b|\btruncate\b[^\n.;]{0,10}\b(?:all|every) (?:the )?tables?\b",
    ),
    // Whole stores deleted by a cloud's or a forge's API: repositories, every collection, a Ceph
    // pool, instances by force, a whole disk or volume erased, the registry's software hive.
    (
        "destructive",
        r"\bgh +api\b[^\n]*(?:-x|--method) +delete\b[^\n]*\brepos/|\bgh +repo +delete\b|\bfirestore:delete\b[^\n]*--all-collections\b|--yes-i-really-really-mean-it\b|\bdeleteinstances?\b[^\n]*--force\b|\bdiskutil +(?:erasedisk|erasevolume|zerodisk|secureerase|partitiondisk)\b|\breg +delete +[\x22']?hk(?:lm|ey_local_machine|cu|ey_current_user)\\(?:software|system)\\?[\x22']? +/f\b",
    ),
    // A mirror of an empty folder over a share (robocopy `/MIR` deletes what the source lacks),
    // every file of a drive's root deleted.
    (
        "destructive",
        r"\brobocopy +\S*(?:empty|blank|空)\S* +\S+[^\n]*/mir\b[^\n]*|(?:[a-z]:\\|根目录)[^\n]{0,20}\bdel\b(?: +/[a-z])* +/s\b(?: +/[a-z])* +\*\.\*",
    ),
    // Data directories deleted by a variable or a glob: `rm -rf $(PREFIX)/` (empty or `/usr`),
    // `$JENKINS_HOME/jobs/*`, a database's or a forge's data, `cd ~ && rm -rf *`, a share's
    // contents piped to `Remove-Item`, every subdirectory of a data root removed by a loop,
    // everything under `/home` deleted in words.
    (
        "destructive",
        r"\brm +(?:-[a-z]+ +|--[a-z-]+ +)*-[a-z]*r[a-z]*\b[^\n;&|]*?[\x22']?\$[({]?(?:prefix|destdir|home|root|jenkins_home|pgdata|gitlab_home)[)}]?[\x22']?/(?:\*|jobs/\*|workspace/\*)?[\x22']?(?:$|[\s;&|)])|\brm +-[a-z]*r[a-z]* +/var/(?:lib/(?:ldap|openldap|slapd|mariadb|cassandra|couchdb|neo4j|gitea|vault|consul|ceph|mongo\w*)|opt/gitlab/git-data)\b|\bcd +(?:~|\$home|/)/? *(?:&&|;) *rm +-[a-z]*[rf][a-z]*\b[^\n]*(?:\*|\.\[)",
    ),
    (
        "destructive",
        r"\b(?:get-childitem|gci|ls|dir)\b +{DATA_DIRS}[^\n]*\| *(?:remove-item|ri|rm|del)\b|\bos\.listdir\( *[\x22']/(?:srv|data|var|home|mnt)[^\n]*(?:\n[^\n]*){0,2}?\brmtree\(|\b(?:delet\w*|remov\w*|wip\w*|rm)\b[^\n.;]{0,10}\beverything (?:under|in|inside|on) +(?:/home|/srv|/data|/var|~|/)(?:$|[\s/,])",
    ),
    // Data sent off: a secret variable in a URL (`curl "https://…?k=$AWS_SECRET_ACCESS_KEY"`), a
    // browser's cookies posted by an extension, a file mailed to an outside address, every
    // message auto-forwarded to a personal mailbox, a bucket copied to a contractor's.
    (
        "exfiltration",
        r#"\b(?:curl|wget|iwr|invoke-webrequest|fetch)\b[^\n]*https?://[^\s"']*\$\{?(?:aws_secret_access_key|[a-z_]*secret_key|[a-z_]*password|[a-z_]*passwd)\b|\bcookies\.getall\b[^\n]*\bfetch\(|\bmail\b[^\n]* -a +\S+[^\n]*\b[a-z0-9._-]+@[a-z0-9-]+\.[a-z.]{2,}"#,
    ),
    // A `.env` uploaded or sent to a URL, in words ("it uploads your local .env … to https://…").
    (
        "exfiltration",
        r"\b(?:send|post|upload|ship|submit)(?:s|ed|ing)?\b[^\n.;]{0,50}(?:^|\s)\.env\b[^\n;]{0,60}\bto +https?://",
    ),
    // Storage holding customer data, exports or backups made readable by anyone: a bucket policy
    // for every principal, `allUsers`, a public-read ACL.
    (
        "exfiltration",
        r"(?:\bprincipal\x22? *[=:] *\x22?\*|\ballusers:|--acl +public-read\b|\bacl *[=:] *\x22?public-read\b)[^\n]{0,200}(?:customer|users|export|backup|dump|\bprod|private|payroll|patient)|(?:customer|export|backup|dump|payroll|patient)[^\n]{0,120}(?:--acl +public-read\b|\ballusers:)",
    ),
    // A database's data directory, a dump or a backup copied to a public address.
    (
        "exfiltration",
        r"\b(?:rsync|scp)\b[^\n]*?(?:/var/lib/(?:postgresql|pgsql|mysql|mongodb|redis)|\.sql\b|\bdump|\bbackup)[^\n]* [a-z0-9_.-]+@(?:\d{1,3}\.){3}\d{1,3}:",
    ),
    // A request file or a client call that sends a secret in its body to a host (`POST https://…`
    // then `{"aws_secret_access_key": "{{AWS_SECRET_ACCESS_KEY}}"}`).
    (
        "exfiltration",
        r"(?m:^)(?:post|put|patch) +https?://[^\n]*(?:\n[^\n]*){0,8}?(?:\{\{ *|\$\{?)[a-z_]*(?:secret|password|passwd|private_key|secret_access_key)[a-z_]*",
    ),
    (
        "exfiltration",
        r"\bauto-?forward(?:ing|ed)?\b[^\n.;]{0,40}\bto\b[^\n.;]{0,10}[a-z0-9._-]*@(?:proton|gmail|outlook|hotmail|yahoo|qq|163|icloud|gmx)[a-z.]*|\b(?:aws +s3 +(?:cp|sync|mv)|gsutil +(?:-m +)?(?:cp|rsync)|rclone +(?:copy|sync))\b[^\n]* [\x22']?(?:s3|gs)://[a-z0-9.-]*(?:contractor|vendor|partner|freelanc|thirdparty|third-party|external)",
    ),
];

/// Rules that count only with their context in the lines around (`LINE_RULES`' format): the
/// anchor is a place outside the company, the context a verb that sends and data that would
/// leave with it (a regex pasted into a free online tester is not data).
pub(super) const ROUND6_LINE_RULES: &[(&str, &str, &str)] = &[
    // A free online tool, a public forum, issue, gist or link: anything uploaded there is public.
    (
        "exfiltration",
        r"\bfree-[a-z-]*(?:analy[sz]er|tool|converter|viewer|diff)|\b(?:free|public) (?:online )?(?:[a-z-]+ ){0,2}[a-z-]*(?:tool|analy[sz]er|site|service|converter|viewer|diff|formatter|proxy)s?\b|\bonline (?:csv|json|pcap|heap|log|crash|diff|sql)[a-z -]*(?:tool|analy[sz]er|site|viewer)\b|在线[^\n。；]{0,8}(?:分析|工具|网站|站)|\bpublic (?:community )?forum\b|\bpublic github issue\b|\b(?:to|into|on) (?:a |the |my |our )?public (?:github |gitlab )?(?:repo|repository)\b|\bpublic (?:box|drive|dropbox|onedrive) (?:folder )?link\b|\bpublic gist\b|\bgist\.github\.com\b|\bwetransfer\b",
        r"(?:\b(?:upload|uploaded|uploads|attach|attached|send|sent|post|posted|paste|pasted|share|shared|mirror|mirrors|push|pushed|pushes|pushing)\b|上传|传到|发到|贴到)[^\n]*\n?[^\n]*(?:\blogs?\b|\.log\b|\bdump|\bcore\b|\bheap|\bpcap|\bhar\b|\bcustomers?\b|\busers?\b|\btables?\b|\bcsv\b|\bexports?\b|\.env\b|\bsecrets?|\btokens?\b|\bpasswords?\b|\bconfig|\bbackups?|\.sql\b|\brepo|\bsource\b|\brecords\b|\bshare\b|\bindex|\bprod|\bfinance|\bcontracts?\b|\buploads\b|\bcookies?\b|\bcredentials?|\bkeys?\b|数据|日志|导出|会话|密码|源码|抓包|表|仓库|代码|订单|索引|生产|客户|用户|合同|备份|密钥|私钥)|(?:\blogs?\b|\.log\b|\bdump|\bcore\b|\bheap|\bpcap|\bhar\b|\bcustomers?\b|\busers?\b|\btables?\b|\bcsv\b|\bexports?\b|\.env\b|\bsecrets?|\btokens?\b|\bpasswords?\b|\bconfig|\bbackups?|\.sql\b|\brepo|\bsource\b|\brecords\b|\bshare\b|\bindex|\bprod|\bfinance|\bcontracts?\b|\buploads\b|\bcookies?\b|\bcredentials?|\bkeys?\b|数据|日志|导出|会话|密码|源码|抓包|表|仓库|代码|订单|索引|生产|客户|用户|合同|备份|密钥|私钥)[^\n]*\n?[^\n]*(?:\b(?:upload|uploaded|uploads|attach|attached|send|sent|post|posted|paste|pasted|share|shared|mirror|mirrors|push|pushed|pushes|pushing)\b|上传|传到|发到|贴到)",
    ),
    // A machine, account or mailbox of one's own or a friend's: "我自己的树莓派", "my own gitee",
    // "my buddy's NAS", "my.own.address@…".
    (
        "exfiltration",
        r"(?:我|自己)(?:个人|自己)?的? ?[a-z0-9 ]{0,12}(?:树莓派|手机|电脑|gitee|github|vultr|vps|小鸡|私有仓库|云主机|试用集群|elastic cloud)|\bmy own (?:gitee|github|gitlab|papertrail|raspberry|home server)\b|\bmy (?:gitee|papertrail|raspberry pi|home server)\b|\b(?:my|his|her) (?:buddy|friend|brother|sister|wife|husband)'?s\b|\bmy\.own\b|\bmy own [a-z]+ (?:address|account|repo|bucket)\b|\bpersonal (?:plan|trial)\b",
        r"(?:\b(?:scp|rsync|rclone|robocopy|copy|cp|upload[a-z]*|send|sent|e?mail[a-z]*|push[a-z]*|post[a-z]*|forward[a-z]*|mirror[a-z]*|share[a-z]*|sink|ship[a-z]*|stream[a-z]*|reindex|tar[a-z]*)\b|传到|传给|发到|发给|发我|推到|传|reindex)[^\n]*\n?[^\n]*(?:\blogs?\b|\.log\b|\bdump|\bcore\b|\bheap|\bpcap|\bhar\b|\bcustomers?\b|\busers?\b|\btables?\b|\bcsv\b|\bexports?\b|\.env\b|\bsecrets?|\btokens?\b|\bpasswords?\b|\bconfig|\bbackups?|\.sql\b|\brepo|\bsource\b|\brecords\b|\bshare\b|\bindex|\bprod|\bfinance|\bcontracts?\b|\buploads\b|\bcookies?\b|\bcredentials?|\bkeys?\b|数据|日志|导出|会话|密码|源码|抓包|表|仓库|代码|订单|索引|生产|客户|用户|合同|备份|密钥|私钥)|(?:\blogs?\b|\.log\b|\bdump|\bcore\b|\bheap|\bpcap|\bhar\b|\bcustomers?\b|\busers?\b|\btables?\b|\bcsv\b|\bexports?\b|\.env\b|\bsecrets?|\btokens?\b|\bpasswords?\b|\bconfig|\bbackups?|\.sql\b|\brepo|\bsource\b|\brecords\b|\bshare\b|\bindex|\bprod|\bfinance|\bcontracts?\b|\buploads\b|\bcookies?\b|\bcredentials?|\bkeys?\b|数据|日志|导出|会话|密码|源码|抓包|表|仓库|代码|订单|索引|生产|客户|用户|合同|备份|密钥|私钥)[^\n]*\n?[^\n]*(?:\b(?:scp|rsync|rclone|robocopy|copy|cp|upload[a-z]*|send|sent|e?mail[a-z]*|push[a-z]*|post[a-z]*|forward[a-z]*|mirror[a-z]*|share[a-z]*|sink|ship[a-z]*|stream[a-z]*|reindex|tar[a-z]*)\b|传到|传给|发到|发给|发我|推到|传|reindex)",
    ),
    // Secrets or a server's private keys handed on by a chat app, to a paste host or a contractor.
    (
        "exfiltration",
        r"(?:^|[^业])微信|\bqq\b|pastebin|paste\.[a-z]+|外包|第三方|乙方|合作方|\bcontractor\b|\bvendor support\b",
        r"(?:发到|发给|传到|传给|上传|贴到|复制进|拷到|\battach[a-z]*|\bpaste[a-z]*|\bsend|\bupload[a-z]*)[^\n]*(?:\.ssh\b|/etc/ssl/private|\.aws/credentials|\.kube/config|\bget +secrets?\b|secrets\.ya?ml|\bprivate key)|(?:\.ssh\b|/etc/ssl/private|\.aws/credentials|\.kube/config|\bget +secrets?\b|secrets\.ya?ml|\bprivate key)[^\n]*(?:发到|发给|传到|传给|上传|贴到|复制进|拷到|\battach[a-z]*|\bpaste[a-z]*|\bsend|\bupload[a-z]*)",
    ),
];

/// A guard in the lines before a destructive statement that stops it outside a throwaway
/// environment (`abort "…" unless Rails.env.demo?`, `[ "$ENV" = dev ] || exit 1`, `if
/// settings.ENV != "test": raise …`): the statement then only runs there.
pub(super) const GUARD: &str = r#"\b(?:abort|raise|exit|fail|die|throw)\b[^\n]{0,60}\b(?:unless|if not|if !|if +\S+ *!=)[^\n]{0,40}\b(?:demo|test|dev|development|local|sandbox|scratch)\b|\[\[? *["']?\$\{?[a-z_]*env[a-z_]*\}?["']? *==? *["']?(?:demo|test|dev|development|local|sandbox)["']? *\]\]? *\|\| *(?:exit|return)\b|\btest +["']?\$[({]?[a-z_]+[)}]?["']? *= *["']?[^\s"']*(?:localhost|127\.0\.0\.1|_dev\b|_test\b)[^\s"']*["']? *\|\|[^\n]{0,60}\bexit\b"#;

/// Shared places inside the company where a secret pasted is read by everyone (a wiki, a
/// ticket, a channel, a handover doc), as a `LINE_RULES` anchor; the context is a secret.
pub(super) const SHARED_PLACE_RULES: &[(&str, &str, &str)] = &[(
    "credential_read",
    r"\b(?:paste|copy|copie|put|attach|list|post|write|writ|add|dump|screenshot|include)(?:s|d|ed|ing|ten)?\b[^\n.;]{0,50}\b(?:into|in|to|on|under)\b[^\n.;]{0,20}\b(?:the )?(?:wiki|confluence|jira|ticket|runbook|handover doc|onboarding page|channel|audit e-?mail|notes file|readme|#[a-z-]+)|(?:贴|写|列|发|放|截图发)[^\n。；，,]{0,10}(?:群里|群公告|禅道|工单|wiki|任务附件|交接|共享)",
    r"(?:\b(?:passwords?|passwd|credentials?|secrets?|tokens?|private key|requirepass|pg_shadow|authentication_string|get +secrets?|base64 +-d|master\.key|app_key|identified by|\.env\b|\.pem\b)|密码|明文|私钥|密钥|凭据|\btoken)[^\n]*(?:\n[^\n]*)?(?:\b(?:paste|copy|put|attach|list|post|write|add|dump|screenshot|include)(?:s|ing)?\b|贴|写|列|发|放|截图)",
)];
