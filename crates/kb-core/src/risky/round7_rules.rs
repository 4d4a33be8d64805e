//! Round 7's rules (the round-6 blind misses, each read as a family of forms rather than a
//! string): infrastructure as code and configuration management that destroy what they manage
//! (Terraform, Pulumi, CDK, Chef, Puppet, compose), whole stores emptied by an API or a loop,
//! TLS checks turned off by a client's settings screen or by a key of any spelling, credential
//! files read by agents' tool calls and by code in any language, secrets committed to a
//! repository or logged, and data sent to a host of one's own, a raw public address, a public
//! link or an outside group. Same format as `rules.rs`' `RULES` (lowercase, `{NAME}` word lists
//! of `rules.rs`); each rule starts with literal words where it can, so that the regex engine's
//! own prefilter skips a text without them.

/// Every rule with its class.
pub(super) const ROUND7_RULES: &[(&str, &str)] = &[
    // Code that runs what it fetched, in the languages round 6 did not read: Perl's `eval
    // get("https://…")` (LWP::Simple), Lua's `io.popen("curl …")` then `load(code)()`, Rust's
    // `reqwest::…::get(…)` then `Command::new("sh")`, Go's `http.Get(…)` then `exec.Command("bash")`
    // fed the body.
    ("pipe_to_shell", r#"\beval\b *\(? *(?:lwp::simple::)?get(?:store)?\( *["']https?://"#),
    (
        "pipe_to_shell",
        r#"(?:\bio\.popen\( *["'](?:curl|wget)\b|\breqwest::(?:blocking::)?get\(|\bhttp\.get\( *["']https?://)[^\n]{0,200}(?:\n[^\n]{0,200}){0,6}?(?:\bload(?:string)?\( *[a-z_]+ *\) *\(\)|\bcommand::new\( *"(?:ba|z)?sh"\)|\bexec\.command\( *"(?:ba|z)?sh"\))"#,
    ),
    // TLS checks turned off by a key of any spelling: a certificate validation set to `ignore`
    // (Ansible WinRM), `skip-verify` as a value (Grafana, Go MySQL DSNs), a skip-verify key with
    // more after it (`…_TLS_SKIP_VERIFY_INSECURE=true`), a switch that disables hostname
    // verification set to true (`System.setProperty("…disableHostnameVerification", "true")`),
    // Perl's `verify_hostname => 0`, LDAP's `LDAPTLS_REQCERT=never`, Kafka's empty endpoint
    // identification, a `--insecure-skip-…-verification` flag.
    (
        "tls_off",
        r#"(?:ssl|tls|cert|certificate)[a-z0-9_.-]*(?:validation|verification|verify)["']? *[:=] *["']?(?:ignore|never|skip)\b|(?:ssl_?mode|tls|sslmode) *[:=] *["']?skip-verify\b|(?:ssl|tls)[-_.]?skip[-_.]?verify[a-z_]*["']? *[:=] *["']?(?:true|yes|1|on)\b"#,
    ),
    (
        "tls_off",
        r#"(?:disable|skip|ignore)[a-z]*(?:hostname|host|cert|certificate|ssl|tls)[a-z]*verification["']? *(?:,|=|:) *["']?(?:true|1|yes)\b|\bverify_hostname\}? *(?:=>|=|:) *["']?0\b|\bssl_verify_mode\b *=> *(?:0|ssl_verify_none)\b|(?:\b|ldap)tls_reqcert *(?:=|:|\s) *["']?(?:never|allow|try)\b|\bssl\.endpoint\.identification\.algorithm *[=:] *(?:["']{2})? *(?:$|[\s(,;)])|--insecure-skip-[a-z-]*verification\b"#,
    ),
    // A client's settings screen with certificate checks switched off, in words: Postman's "SSL
    // certificate verification: OFF" (关掉), Insomnia's "Validate certificates" unchecked,
    // JetBrains' "Accept non-trusted certificates automatically" ticked, Flutter's
    // `badCertificateCallback` returning true.
    (
        "tls_off",
        r#"\b(?:ssl certificate verification|certificate verification|validate certificates|verify ssl certificates)\b["']?[^\n。；]{0,8}(?:\boff\b|\bunchecked\b|\bunticked\b|\bdisabled\b|关掉|关闭|取消勾选|不勾选)|\baccept non-trusted certificates(?: automatically)?\b["']?[^\n.;。；]{0,10}(?:\btick|\bcheck|\benable|勾选|打开)|\bbadcertificatecallback\b[^\n]{0,60}=> *true\b"#,
    ),
    // A weaker TLS mode chosen so that the certificate is not checked: `sslmode: require (not
    // verify-full)`, "so it stops complaining about the certificate".
    (
        "tls_off",
        r"\bsslmode *[:=] *[\x22']?require\b[^\n]{0,80}(?:\bnot verify|instead of verify|rather than verify|stops? complaining|\bcertificate\b|证书)",
    ),
    // Whole stores destroyed by infrastructure as code: a production stack or resource destroyed
    // (`pulumi destroy --stack acme/prod`, `cdk destroy ProdStack`, `terraform destroy
    // -target=….prod_media`), a database's protections turned off then the resource replaced
    // or destroyed, a bucket forced destroyable then destroyed.
    ("destructive", r"\b(?:pulumi|terraform|tofu|cdk|cdktf) +destroy\b[^\n]*\bprod"),
    (
        "destructive",
        r"(?:skip_?final_?snapshot|force_?destroy)\b[^\n]{0,12}(?:=|:|改成|设成|设为|to) *true\b[^\n]*(?:\n[^\n]*){0,4}?(?:-replace\b|--replace\b|\bdestroy\b|重建)",
    ),
    // Configuration management that deletes a data directory (Chef's `directory … action
    // :delete`, Puppet's `ensure => absent, force => true`).
    (
        "destructive",
        r"\bdirectory +{DATA_DIRS}[^\n]*?\bdo\b[^\n]*(?:\n[^\n]*){0,3}?\baction +:delete\b|\bfile *\{ *{DATA_DIRS}[^}]{0,80}\bensure *=> *absent\b[^}]{0,40}\bforce *=> *true\b",
    ),
    // A whole table emptied by code or on purpose without `WHERE`: a statement string that
    // ends at the table (`db.Exec("DELETE FROM events")`, `jdbcTemplate.update("delete from
    // t_message")`), "no WHERE needed" (不用加 where).
    (
        "destructive",
        r#"\bdelete +from +[a-z0-9_.]+ *["'] *[),]|\bdelete +from +[a-z0-9_.]+\b[^\n。；]{0,30}(?:不用|不加|不需要|无需|没有|不带)加? *where\b|\bdelete +from +[a-z0-9_.]+\b[^\n.;]{0,30}\b(?:no|without(?: a)?) where\b"#,
    ),
    // Tables dropped by a migration run against production (`knex.schema.dropTableIfExists(…)` "—
    // run against DATABASE_URL from the prod env file").
    ("destructive", r"\b(?:droptable(?:ifexists)?|drop_table|dropschema)\( *[\x22'][^\n]*\bprod"),
    // Every index, topic, branch or tenant at once: an HTTP DELETE of a search cluster's `_all`
    // or a whole family of indices (`logs-*,orders-*`) by any client, every Kafka topic, every
    // release branch or tag pushed away by a substitution, a DELETE with `all=true`.
    (
        "destructive",
        r#"(?:-x +delete|\bhttp +delete|-method +delete)\b +[\x22']?(?:https?://)?[^\s\x22'/]*:9200/(?:_all\b|\*|[a-z_]+-?\*(?:,[a-z_]+-?\*)*(?:$|[\s\x22'?]))|\bkafka-topics(?:\.sh)?\b[^\n]*--delete\b[^\n]*--topic +[\x22']?(?:\.\*|\*)|\bgit +push\b[^\n]*--delete\b[^\n]*\$\( *git +(?:branch|tag)\b|\bdelete +\S*\?(?:\S*&)?all=(?:true|1)\b"#,
    ),
    // Windows: every VM or disk piped into its removal (`Get-VM | Remove-VM -Force`, `Get-Disk |
    // … | Clear-Disk -RemoveData`).
    (
        "destructive",
        r"\bget-(?:vm|disk|volume|partition|mailbox|aduser|adcomputer|azresourcegroup|azvm)\b *(?:\|[^\n|]*){0,2}?\| *(?:remove|clear)-(?:vm|disk|volume|partition|mailbox|aduser|adcomputer|azresourcegroup|azvm)\b",
    ),
    // A data directory deleted by code (`std::fs::remove_dir_all("/var/lib/minio/data")`,
    // `os.RemoveAll("/data")`), by `find` run from Perl over `/home`, a data directory given to
    // `rm -r` after another argument, a shared drive's files deleted by `find` on a schedule.
    (
        "destructive",
        r#"\b(?:remove_dir_all|rmtree|rm_rf|rmsync|removeall|deletedirectory|remove_tree)\( *{DATA_DIRS}|\bfind\( *sub *\{[^}\n]*\b(?:unlink|rmtree|remove_tree)\b[^}\n]*\} *, *["'](?:/|/home|/srv|/data|/var)/?["']|\brm +(?:-[a-z]+ +)*-[a-z]*r[a-z]*\b(?: +[^\s;&|]+)+? +{DATA_DIRS}"#,
    ),
    ("destructive", r"\bfind +\S*(?:共享|/shared?\b|/share/|/public\b|公共|部门)\S* [^\n]*(?:-delete\b|-exec +rm\b)"),
    // A production compose project brought down with its volumes; a home's own data deleted
    // (`rm -rf ~/projects/*`, CMake's `rm -rf \$ENV{HOME}/.local/share`).
    ("destructive", r"\bdocker[- ]compose\b[^\n]*\bprod[^\n]*\bdown\b[^\n]*(?: -v\b| --volumes\b)"),
    (
        "destructive",
        r#"\brm +(?:-[a-z]+ +)*-[a-z]*r[a-z]*\b(?: +-[a-z]+)* +["']?(?:~|\$home|\$\{home\}|\\?\$env\{home\}|\$env:userprofile|%userprofile%)["']?/(?:\.local/share|projects|documents|desktop|code|src|workspace|repos|work|pictures|downloads)/?\*?["']?(?:$|[\s;&|)])"#,
    ),
    // Credential files read by an agent's tool call (`{"tool":"read_file","arguments":{"path":
    // "/home/ci/.docker/config.json"}}`), by Perl's `open` then `print`, archived by `tar`.
    (
        "credential_read",
        r#"\b(?:read_file|readfile|read|open_file|view_file|get_file|file_read|cat)\x22[^\n]{0,80}\x22(?:path|file|filename)\x22 *: *\x22[^\x22\n]*{CRED}"#,
    ),
    ("credential_read", r#"\bopen\( *my +\$\w+ *, *["']<["'] *, *[^\n]{0,40}{CRED}"#),
    ("credential_read", r"\b(?:tar|zip|7z)\b +-?[a-z]*[acz][a-z]* +[^\n;&|]{0,80}? +{CRED}"),
    // Files that hold live secrets, read by a command or by code in any language: a `secrets`
    // directory or file (`cat /data/secrets/*.json`, `cat /etc/app/secrets.env`), Nacos'
    // `auth.properties`, Maven's `settings-security.xml`, a GitLab runner's `config.toml`.
    (
        "credential_read",
        r#"(?:\b(?:cat|cats|type|get-content|gc|less|more|head|tail|bat|strings)\b(?: +-\S+)* +["']?\S*|\b(?:os\.readfile|ioutil\.readfile|files\.readstring|files\.readallbytes|readfilesync|read_to_string|file_get_contents)\( *[^\n]{0,80}?)(?:/secrets?/[^\s\x22')]*|\bsecrets?\.(?:env|json|ya?ml|properties|txt|toml)\b|\bauth\.properties\b|settings-security\.xml\b|/etc/gitlab-runner/config\.toml\b)"#,
    ),
    // Secrets shown where people read them: a Kubernetes service account's token logged, the
    // whole environment returned by a route (`res.json({ ...process.env })`), an Authorization
    // header logged by OpenResty, a browser extension's cookies printed, a CI secret echoed
    // through a filter so that masking misses it, a Terraform output unmasked, the environment
    // written to a share, a credential manager's passwords exported.
    (
        "credential_read",
        r"\bserviceaccount/token\b[^\n.;]{0,30}\b(?:log|print|echo)|\.(?:json|send)\( *\{ *\.\.\.process\.env\b|\b(?:jsonify|return)\b\(? *\{ *\.\.\.process\.env\b|\b(?:ngx\.log|logger\.\w+|log\.\w+|console\.log|print)\b[^\n]{0,60}\b(?:http_authorization|http_cookie)\b|\bcookies\.getall\b[^\n]*\b(?:console\.log|json\.stringify|print)\b",
    ),
    (
        "credential_read",
        r"\bwithcredentials\b[^\n]*\becho +[\x22']?\$\{?[a-z_]+\}?[\x22']? *\| *(?:rev|base64|xxd|od|sed)\b|\becho +\S+ *\| *(?:rev|base64|xxd|sed)\b[^\n]{0,80}\b(?:mask|masking|masked|打码)",
    ),
    (
        "credential_read",
        r"(?:password|secret|token|private_key)[^\n]*(?:\n[^\n]*){0,3}?\bsensitive *= *false\b|\bsensitive *= *false\b[^\n]*(?:\n[^\n]*){0,2}?[^\n]*(?:password|secret)[^\n]*\b(?:shows?|log|visible)",
    ),
    (
        "credential_read",
        r"\b(?:get-childitem|gci|dir|ls) +env:[^\n]*\| *(?:out-file|set-content|tee(?:-object)?)\b +[\x22']?(?:\\\\|//)|\b(?:credentialmanager|get-storedcredential)\b[^\n。；]{0,20}(?:密码|passwords?)[^\n。；]{0,10}(?:导出|\bexport|\bdump)",
    ),
    // Secret files committed to a repository: a production `.env`, `application-prod.yml`, an
    // IDE's data sources with passwords, an export holding a live key kept in git.
    (
        "credential_read",
        r"(?:\.env\.(?:prod[a-z]*|staging)|application-prod\.ya?ml|datasources(?:\.local)?\.xml)[^\n]{0,80}(?:to the repo\b|into the repo\b|提交到仓库|加回仓库|提交到 ?git|进仓库)|\b(?:add|adds|added|commit|commits|committed)\b[^\n]{0,60}(?:\.env\.(?:prod[a-z]*|staging)|application-prod\.ya?ml|datasources(?:\.local)?\.xml)[^\n]{0,120}(?:\brepo\b|\bgit\b)|\bin git\b[^\n]{0,120}\bsk_live_",
    ),
    // The environment dumped so that someone sees its secrets ("`env | sort` … so we can see what
    // CI_DEPLOY_PASSWORD … are set to").
    (
        "credential_read",
        r"\b(?:env|printenv)(?: *\| *sort)?\b[^\n]{0,80}?\b(?:so (?:we|i|you|they) can see|to see) (?:what|which|the)\b[^\n]{0,80}(?:password|secret|_key|token)",
    ),
    ("credential_read", r"\bnetsh +wlan +show +profiles?\b[^\n]*\bkey *= *clear\b"),
    // Data piped to a free mailbox (`mysqldump … | mail -s … me@gmail.com`), or into netcat to a
    // raw address.
    (
        "exfiltration",
        r"\| *(?:mail|mailx|mutt|sendmail)\b[^\n|;&]*[a-z0-9._-]+\\?@(?:gmail|googlemail|outlook|hotmail|yahoo|qq|163|126|proton\w*|icloud|gmx)\.|\| *(?:nc|ncat|netcat) +(?:\d{1,3}\.){3}\d{1,3} +\d{2,5}\b",
    ),
    // A database opened to the whole internet (`publicly_accessible = true` with `0.0.0.0/0`), a
    // bucket's public-access block lifted and made public-read over identity documents.
    (
        "exfiltration",
        r"\bpublicly_?accessible\b[^\n]{0,12}(?:=|:|改成|设成|设为|to) *true\b[^\n]*0\.0\.0\.0/0|(?:publicaccessblock|block_?public_?acls?)\b[^\n]{0,30}(?:false|关闭)[^\n]*\bpublic-read\b",
    ),
];

/// A verb that sends, syncs or exports, in English and Chinese (the context of `ROUND7_LINE_RULES`).
macro_rules! sends {
    () => {
        r"(?:\b(?:upload[a-z]*|send[a-z]*|sent|post[a-z]*|push[a-z]*|mirror[a-z]*|sync[a-z]*|ship[a-z]*|replicat[a-z]*|forward[a-z]*|rsync[a-z]*|scp|share[a-z]*|export[a-z]*|stream[a-z]*)\b|autoupload|上传|发到|发给|推送|推到|同步|传到|贴到|导出|post ?到)"
    };
}

/// Data that would leave with it: logs, dumps, customers, secrets, request bodies, 订单, 身份证.
macro_rules! leaves {
    () => {
        r"(?:\blogs?\b|\.log\b|\bdump|\bcustomers?\b|\busers?\b|\bsubscribers?\b|\bcontacts?\b|\btables?\b|\bcsv\b|\bxlsx\b|\bexports?\b|\.env\b|\bsecrets?|\btokens?\b|\bpasswords?\b|\bbackups?|\.sql\b|\brecords\b|\bprod|\baudit\b|\bbod(?:y|ies)\b|\bheaders?\b|\bcookies?\b|\bcredentials?|\bemails?\b|\bphones?\b|\borders?\b|数据|日志|导出|密码|订单|生产|客户|用户|名单|手机号|身份证|备份|密钥|binlog|cookie|请求体)"
    };
}

/// Rules that count only with their context in the lines around (`LINE_RULES`' format): the
/// anchor a place outside the company, the context a verb that sends or syncs and data that
/// would leave with it.
pub(super) const ROUND7_LINE_RULES: &[(&str, &str, &str)] = &[(
    "exfiltration",
    concat!(
        // Paste, request-bin, transfer and webhook-to-spreadsheet hosts.
        r"\b(?:hastebin|requestbin|webhook\.site|pipedream|beeceptor|cowtransfer|wetransfer|transfer\.sh|file\.io|0x0\.st|termbin|logsnag|hooks\.zapier|gist\.github\.com|public gist)|seedbox",
        // A place of one's own: "my grafana cloud trial", "my Google Sheet", "my analysis box at
        // home", "my own account", 我个人的, 个人账号, 个人盘, 个人页面, dynamic DNS. (A paste host
        // is `round6_rules.rs`' anchor, with its own context; "at home" alone is prose.)
        r"|\bmy (?:[a-z-]+ ){0,2}(?:trial|sheet|notion|bot|box|side ?project)\b|\bmy own (?:account|bucket|server|machine|box)\b|\b(?:box|server|machine|nas|pc|computer|pi) at home\b|\bin my (?:own )?(?:google )?(?:sheet|drive|notion)\b",
        r"|我个人的|个人(?:账号|帐号|盘|网盘|页面|的 ?bot)|\bdyndns|\bddns\b|\bduckdns\b|\bno-ip\.",
        // A raw public address (`http://47.100.x.x:9200/`, `guest@101.35.x.x:~`); a private one is
        // excepted (`EXCEPTIONS`).
        r"|(?:https?://|@)(?:\d{1,3}\.){2}(?:\d{1,3}|x)\.(?:\d{1,3}|x):",
        // A public link or an outside group: "anyone with the link", 知道链接的任何人, 外部群,
        // a partner's personal WeChat, someone outside the company.
        r"|\banyone with the link\b|知道链接的(?:任何人|所有人)|外部(?:客户)?群|个人微信|\boutside the company\b",
    ),
    concat!("(?:", sends!(), r"[^\n]*\n?[^\n]*", leaves!(), "|", leaves!(), r"[^\n]*\n?[^\n]*", sends!(), ")"),
)];

/// Cheap gates for the round-6 and round-7 rules that have no literal start (`GATES`' format: the rule's
/// pattern, then what must match first).
pub(super) const ROUND7_GATES: &[(&str, &str)] = &[
    (
        r"\bset +-x\b[^\n]{0,120}\b(?:[a-z_]*pass(?:word)?|[a-z_]*secret[a-z_]*|[a-z_]*token|api_?key)\b[^\n]{0,60}\b(?:console|log|output|see)\b|(?:^|[^(\w$-])terraform +output\b[^\n)]*(?:password|secret|token|private_key)[^\n)]*(?:$|[;&\n])|\bcredentials\.config\b[^\n]*\b(?:puts|to_yaml|pp|inspect)\b",
        r"set +-x|terraform +output|credentials\.config",
    ),
    (
        r"(?:\.env\.(?:prod[a-z]*|staging)|application-prod\.ya?ml|datasources(?:\.local)?\.xml)[^\n]{0,80}(?:to the repo\b|into the repo\b|提交到仓库|加回仓库|提交到 ?git|进仓库)|\b(?:add|adds|added|commit|commits|committed)\b[^\n]{0,60}(?:\.env\.(?:prod[a-z]*|staging)|application-prod\.ya?ml|datasources(?:\.local)?\.xml)[^\n]{0,120}(?:\brepo\b|\bgit\b)|\bin git\b[^\n]{0,120}\bsk_live_",
        r"\.env\.|application-prod|datasources|sk_live_",
    ),
];
