//! Round 9: more of round 8's table (`tools.rs`), written from what tools and services do after
//! reading which tools blind 8 named and round 8 did not know: PaaS, hypervisor, identity,
//! secret-manager and broker CLIs that destroy at scale; settings of clients, tunnels and
//! firmware libraries that stop checking certificates (and the spelling of settings in words,
//! "设成 1"); stores opened to anyone and places of one's own; the commands that print a
//! tool's secrets, counted when their output is handed over (pasted, committed, posted, shared).
//!
//! Same format as `tools.rs`: `(tool, form)` entries of one class, joined with round 8's forms
//! of that class (`rounds.rs`' `FORM_RULES`); rules read with a context around in `LINE_RULES`'
//! format; scopes and exceptions that join `SCOPED` and `EXCEPTIONS`.

/// How a setting is given a value, in code, configuration or words: `=`, `:`, `设成`, "set to".
macro_rules! set_to {
    () => {
        r#"\W{0,3} *(?:[:=]|=>|设成|设为|改为|改成|写成|写|配成|set to|to)? *["']?"#
    };
}

/// Code fetched and run, per language or tool.
pub(super) const PIPE_FORMS9: &[(&str, &str)] = &[
    (
        "clojure",
        r"\(load-string +\( *slurp +[\x22']https?://|\(load-file +[\x22']https?://|\(eval +\(read-string +\( *slurp +[\x22']https?://",
    ),
    ("zsh", r"\b(?:zsh|bash|sh|source) +=\( *(?:curl|wget)\b"),
    ("ssh", r"\bssh\b[^\n|]*\s[\x22']\$\( *(?:curl|wget)\b[^\n]*https?://"),
    (
        "powershell",
        r"\[scriptblock\]::create\( *\(? *(?:invoke-restmethod|irm|invoke-webrequest|iwr|\(new-object +(?:system\.)?net\.webclient\)\.downloadstring)\b",
    ),
    ("rails", r"\brails +(?:app:template +location=|new\b[^\n]*\s-m +)[\x22']?https?://"),
    (
        "nomad",
        r"\bartifact\b(?:[^\n]*\n){0,3}?[^\n]*https?://\S+\.sh\b(?:[^\n]*\n){0,8}?[^\n]*(?:\b(?:ba|z)?sh\b[^\n]*\blocal/|/bin/(?:ba|z)?sh\b)",
    ),
    (
        "in words",
        r"\b(?:fetch|download|pull)(?:es|s|ed)? and (?:execute|run)s? +https?://|(?:下载|拉取)并(?:执行|运行) *https?://",
    ),
];

/// Destroyed at scale, per tool.
pub(super) const DESTRUCTIVE_FORMS9: &[(&str, &str)] = &[
    // PaaS, database branches, identity and secret managers: a whole app, realm or vault.
    (
        "heroku",
        r"\bheroku +apps:destroy\b[^\n]*--confirm\b|\b(?:fly|flyctl) +apps +(?:destroy|delete)\b[^\n]*(?:--yes|\s-y)\b",
    ),
    ("pscale", r"\bpscale +(?:branch +delete +\S+ +(?:main|master|prod\S*)|database +delete)\b[^\n]*--force\b"),
    ("keycloak", r"\bkcadm(?:\.sh)? +delete +realms/[a-z0-9_-]+ *(?:$|[\s;&|，。])"),
    ("password managers", r"\bop +vault +delete\b|\bbw +delete +org(?:anization)?\b"),
    ("symfony", r"\bdoctrine:(?:schema:drop|database:drop)\b[^\n]*--force\b"),
    ("rails", r"\bdisable_database_environment_check *= *1\b"),
    // Hypervisors and containers: a VM's disks with it, every VM.
    ("proxmox", r"\b(?:qm|pct) +destroy\b[^\n]*--destroy-unreferenced-disks +1\b"),
    (
        "powercli",
        r"\bremove-vm\b[^\n]*-deletepermanently\b[^\n]*-confirm: *\$false\b|\bget-vm\b[^\n]*\|[^\n]*\bremove-vm\b[^\n]*-deletepermanently\b",
    ),
    (
        "govc",
        r"\bgovc +(?:vm\.destroy|datastore\.rm|pool\.destroy|folder\.destroy|snapshot\.remove)\b[^\n]*\s[\x22']\S*\*",
    ),
    ("lxd", r"\b(?:lxc|incus) +delete\b[^\n]*\$\( *(?:lxc|incus) +list\b"),
    ("rook", r"\byes-really-destroy-data\b"),
    // Disks and partition tables (BSD).
    ("gpart", r"\bgpart +destroy +-f\b|\bgpart +delete\b[^\n]*\$\("),
    // Brokers, logs and metrics stores: every message, every stream.
    ("kafka", r"\bretention\.ms *= *\d{1,4}\b"),
    ("loki", r"/(?:loki/)?api/v1/(?:admin/tsdb/delete_series|delete)\?[^\n]*=~ *\\?[\x22']?\.[*+]"),
    ("b2", r"\bb2 +sync\b[^\n]*--allowemptysource\b"),
    (
        "object lifecycle",
        r"\b(?:backups?|snapshots?|archives?)\b[^\n]{0,80}\b(?:expire|expiration|delete)\w*\b[^\n]{0,40}\bafter +[01] +days?\b",
    ),
    // Forges and trackers: a whole project deleted past its trash.
    (
        "jira",
        r"\benableundo=false\b|(?:-x ?delete|--request +delete|调用 *delete|\bcall +delete)\b[^\n]*/rest/api/\d/(?:project|space)/",
    ),
    (
        "git",
        r"(?:\bempty\b|\bblank\b|空仓库|空的仓库|\bgit +init\b)[^\n]{0,80}\bgit +push\b[^\n]*--mirror\b|\bgit +push\b[^\n]*--mirror\b[^\n]{0,60}(?:覆盖|清空|\boverwrit|\breset the repo|\bwipe)",
    ),
    ("elasticsearch", concat!(r"\baction\.destructive_requires_name", set_to!(), r"false\b")),
    // Scripts that empty a share or a whole folder.
    ("vba", r"\bkill +[\x22']?(?:\\\\|[a-z]:\\)[^\n]*\*\.\*"),
    ("applescript", r"\bdelete every (?:item|file|folder)\b[^\n]*(?:\n[^\n]*){0,3}?\bempty (?:the )?trash\b"),
    (
        "shares",
        r"(?:删除|删掉|清空|\bkill\b)[^\n。；]{0,12}\\\\[a-z0-9._-]+\\[^\s。；，]*[^\n。；]{0,12}(?:整个|所有|全部)|(?:整个|所有|全部)[^\n。；]{0,6}\\\\[a-z0-9._-]+\\",
    ),
    // Listed, then all of it deleted, said in words ("pct list 出来的全部 pct destroy").
    (
        "list then delete, in words",
        r"\b(?:list|ls|status)\b[^\n。；]{0,40}(?:全部|所有|一律|统统|一把|逐个|挨个)[^\n。；]{0,24}(?:删|清|destroy|delete|purge|\brm\b)",
    ),
];

/// Settings that stop checking certificates, per tool.
pub(super) const TLS_OFF_FORMS9: &[(&str, &str)] = &[
    // Environment variables of tools, by their naming: `GOVC_INSECURE=1`, `SSL_NO_VERIFY_PEER=1`.
    (
        "env",
        concat!(
            r"(?:_insecure|_skip_verify|_skip_tls_verify|_tls_skip_verify|_insecure_skip_verify|_no_verify_peer|_no_verify_hostname|_no_verify)\b",
            set_to!(),
            r"(?:1|true|yes|on)\b"
        ),
    ),
    (
        "env",
        concat!(
            r"(?:_ssl_verify|_tls_verify|_verify_ssl|_verify_tls|_sslverify)\b",
            set_to!(),
            r"(?:0|false|no|off)\b"
        ),
    ),
    ("node", r"\bnode_tls_reject_unauthorized\b[^\n]{0,60}\b(?:value|值)\W{0,3} *[\x22']?0\b"),
    ("keycloak", r"hostname[_-]verification[_-]policy\W{0,3} *[:= ] *[\x22']?any\b"),
    ("cloudflared", concat!(r"\bnotlsverify", set_to!(), r"true\b")),
    ("cloudflare", r"\bssl(?:/tls)?(?: encryption)? mode\W{1,4}(?:flexible\b|full\W{0,4}\(?not strict)"),
    ("clojure and lisp", r":insecure\?? +(?:true|t)\b"),
    ("curlrc", r"\.curlrc\b[^\n]*(?:\n[^\n]*){0,6}?\n *-{0,2}insecure *(?:$|\n)"),
    ("lxd", r"\b(?:lxc|incus) +remote +add\b[^\n]*--accept-certificate\b"),
    ("svn", r"--trust-server-cert(?:-failures)?\b"),
    ("runners", concat!(r"\brunner\.insecure", set_to!(), r"true\b")),
    ("apps script", r"\bvalidatehttpscertificates *: *false\b"),
    ("arduino", r"\.setinsecure\( *\)"),
    ("elastic", concat!(r"\bverification_?mode", set_to!(), r"none\b")),
    ("openstack", r"\bclouds\.yaml\b[^\n]{0,40}\bverify\b[^\n]{0,8}\bfalse\b|--os-insecure\b"),
    ("glab", r"\bskip_tls_verify +(?:true|1)\b"),
    ("laravel", r"\bwithoutverifying\( *\)"),
    ("fetch", r"--no-verify-(?:peer|hostname)\b"),
    (
        "winhttp",
        r"\.option\( *4 *\) *:?= *(?:0x3300|&h3300|13056)\b|\bsetoption\(? *2 *, *(?:13056|sxh_server_cert_ignore_all_server_errors)\b",
    ),
    (
        "aliases",
        r"\balias +[a-z0-9_-]+ *= *[\x22'][^\x22'\n]*(?:--insecure|--no-check-certificate|--insecure-skip-tls-verify|--skip-tls-verify)\b",
    ),
    ("mc", r"\bmc\b[^\n|;&]*\s--insecure\b"),
    ("openbsd ftp", r"\bftp\b[^\n]*\s-s +dont\b"),
    ("s3cmd", r"\bcheck_ssl_(?:certificate|hostname) *= *false\b"),
];

/// Data made readable by anyone or sent to a place of one's own, per tool (with `PUBLIC_DATA`
/// for the forms that count only beside data).
pub(super) const EXFILTRATION_FORMS9: &[(&str, &str)] = &[
    // Free file hosts that give anyone a public address.
    (
        "file hosts",
        r"\b(?:tmpfiles\.org|catbox\.moe|litterbox\.catbox|temp\.sh|bashupload\.com|gofile\.io|pixeldrain\.com|uguu\.se|oshi\.at|app\.netlify\.com/drop)\b",
    ),
    // Mail from code: a copy to a free mailbox.
    (
        "mail code",
        r"\.to *= *[\x22'][a-z0-9._-]+@(?:gmail|googlemail|hotmail|outlook|yahoo|qq|163|126|proton(?:mail)?|icloud|gmx)\.[^\n]*(?:\n[^\n]*){0,3}?\.(?:attachments|send)\b|\brecipients\W{0,3} *:? *\[ *[\x22'][a-z0-9._-]+@(?:gmail|googlemail|hotmail|outlook|yahoo|qq|163|126|proton(?:mail)?|icloud|gmx)\.",
    ),
    (
        "1password",
        r"\bop +item +share\b[^\n]*--emails? +\S*@(?:gmail|googlemail|hotmail|outlook|yahoo|qq|163|126|proton(?:mail)?|icloud|gmx)\.",
    ),
    // A store, a broker or a search cluster copied into one's own account.
    (
        "own accounts",
        r"\b(?:my|his|her)(?: own)?(?: free)? (?:cloudamqp|supabase|grafana cloud|ngs|neon|atlas|elastic cloud|upstash|aiven|planetscale|render|railway)\b|\bpersonal-[a-z0-9-]*\.creds\b|\bcloudamqp\.com/\S*(?:free|personal|my)",
    ),
    (
        "own buckets",
        r"(?:personal|myown|private-me)-[a-z0-9-]*(?:backup|bucket|dump|archive)s?\b|\bmy-own-[a-z0-9-]*(?:backup|dump|archive)s?\b|\bmy-own-bucket\b|\bmy(?:dropbox|gdrive|drive|onedrive|box|mega):",
    ),
    // Uploaded or sent to a person's own drive, mailbox or account, in words.
    (
        "own places, in words",
        r"(?:上传|发送?|传|存|备份|同步|导)[^\n。；]{0,12}(?:个人|私人|自己)的?[^\n。；]{0,6}(?:百度网盘|网盘|云盘|google drive|dropbox|onedrive|icloud|邮箱|微信|私人号|号|sentry|账号)",
    ),
    ("elasticdump", r"\belasticdump\b[^\n]*(?:供应商|vendor|外部|third|公网|public)"),
];

/// Commands that print or hand over the secrets a tool keeps (the anchors of `TOOL9_LINE_RULES`:
/// counted when their output is handed over), a few tools to an anchor so that each one's lazy
/// DFA stays small.
const SECRET_PRINTERS_1: &str = concat!(
    r"\bheroku +config\b(?: +-[a-z]+| +--[a-z-]+(?:[= ]\S+)?)*(?: +-a +\S+)?(?:$|[\s;&|>`]|:get\b)",
    r"|\bvault +(?:kv +get|read)\b|\bnomad +var +get\b|\bconsul +acl +token +read\b",
    r"|\bmc +(?:admin +config +export|alias +(?:list|ls))\b|\bceph +auth +(?:get|ls|list|print-key|export)\b",
    r"|\bkubectl +view-secret\b|\bkubectl\b[^\n|]*\bget +secrets?\b[^\n|]*-o +(?:yaml|json|jsonpath|go-template)",
    r"|\bkcadm(?:\.sh)? +get\b[^\n]*client-secret\b|\bkc\.sh +export\b",
);

const SECRET_PRINTERS_2: &str = concat!(
    r"\bopenstack +(?:ec2 +credentials|application +credential) +(?:list|show|create)\b",
    r"|\bsupabase +projects +api-keys\b|\bauth0\b[^\n]*--reveal(?:-secrets)?\b|\bvercel +env +pull\b|\bnetlify +env:(?:list|get)\b",
    r"|\b(?:fly|flyctl) +ssh +console\b[^\n]*-c +[\x22']?(?:env|printenv)\b|\bpodman +secret +inspect\b[^\n]*--showsecret\b",
    r"|\bphp +artisan +(?:config:show|env)\b|\bbin/console +(?:secrets:reveal|secrets:list +--reveal|debug:container +--env-vars)\b",
    r"|\bfirebase +functions:config:get\b|\bredis-cli\b[^\n]*\b(?:acl +(?:list|getuser)|config +get +requirepass)\b",
);

const SECRET_PRINTERS_3: &str = concat!(
    r"\brabbitmqctl +export_definitions\b|\bcryptsetup +luksdump\b[^\n]*--dump-(?:volume|master)-key\b",
    r"|\bmanage\.py +(?:diffsettings|shell\b[^\n]*settings\.(?:databases|secret_key))|\bsettings\.(?:databases|secret_key)\b",
    r"|\bgh +auth +token\b|\bglab +(?:variable +get|auth +status\b[^\n]*(?:-t|--show-token))\b|\bpscale +password +create\b",
    r"|\bop +item +get\b[^\n]*--reveal\b|\bbw +get +(?:password|item)\b|\blpass +show\b[^\n]*--password\b",
    r"|\bgcloud +(?:auth +print-(?:access|identity)-token|secrets +versions +access)\b|\baz +(?:account +get-access-token|keyvault +secret +show)\b",
);

const SECRET_PRINTERS_4: &str = concat!(
    r"\baws +(?:secretsmanager +get-secret-value|ssm +get-parameters?\b[^\n]*--with-decryption|configure +get +aws_secret_access_key)\b",
    r"|\bdoppler +secrets +download\b|\binfisical +export\b|\bsops +(?:-d|--decrypt)\b|\bansible-vault +(?:view|decrypt)\b|\bterraform +output +-(?:raw|json)\b",
    r"|\bcmdkey +/list\b|\bget-vicredentialstoreitem\b|\bgit +credential +fill\b|/etc/zfs/keys/|\bmaster\.passwd\b",
);

/// What hands a secret's output over: pasted, posted, attached, pinned, committed, shared, or
/// put in a page, a sheet, a ticket, a chat or a CI log.
const HANDED_OVER: &str = concat!(
    r"\b(?:paste[ds]?|pasting|post(?:s|ed)?|attach(?:es|ed)?|pin(?:s|ned)?|commit(?:s|ted)?|share[ds]?|sharing|screenshot|copy (?:it |them |the \w+ )?(?:in)?to|put (?:it|them|the \w+) (?:in|on|into)|drop (?:it )?into|git +add)\b",
    r"|\b(?:wiki|confluence|notion|readme|ticket|issue|channel|slack|postmortem|change record|onboarding doc|handover|sheet|spreadsheet|excel)\b|#[a-z][a-z0-9-]+",
    r"|截图|贴到|贴在|贴进|粘贴|发到|发给|发群|群里|到群|群聊|文档|工单|附件|备注|表格|共享|交接|抄到|复制到|写进|写到|放到|放进|扔进|扔到|提交|审批单|公开|日志",
    // A network share, a log of CI or of a job.
    r"|\\\\[a-z0-9._-]+\\|\b(?:ci|job|build|jenkins|runner) logs?\b",
);

/// Rules that count only with their context around (`LINE_RULES`' format).
pub(super) const TOOL9_LINE_RULES: &[(&str, &str, &str)] = &[
    ("credential_read", SECRET_PRINTERS_1, HANDED_OVER),
    ("credential_read", SECRET_PRINTERS_2, HANDED_OVER),
    ("credential_read", SECRET_PRINTERS_3, HANDED_OVER),
    ("credential_read", SECRET_PRINTERS_4, HANDED_OVER),
    // A store opened to anyone: counted beside data that is not public.
    (
        "exfiltration",
        concat!(
            r"\bmc +anonymous +set +(?:download|public|upload)\b|\bb2 +bucket +update +\S+ +allpublic\b|\ballusers:(?:objectviewer|legacyobjectreader|reader)\b",
            r"|--acl +public-read\b|--public-access +(?:blob|container)\b|\bwrangler +r2 +bucket +dev-url +enable\b|\bopenstack +image +set +--public\b",
            r"|--visibility[= ]public\b|\ballow +read(?:, *write)? *: *if +true\b|\bdisable +row +level +security\b|\bprotected-mode +no\b",
            r"|\bxpack\.security\.enabled *: *false\b|\bauth\.anonymous\b|\banonymous\W{0,3} *(?:\x22?view\x22?|read|access)\b|\bpublic dashboard\b",
            r"|anyone with the link|获得链接的任何人|任何人可查看|\bhttp\.server\b[^\n]*--bind +0\.0\.0\.0\b|\bmc +share +download\b",
            // Tunnels that give a local service a public address.
            r"|\bcpolar +(?:http|tcp)\b|\bnatapp\b|\bbore +local\b|\blt +--port\b|\bnpx +localtunnel\b|\bzrok +share +public\b",
        ),
        r"(?:\bcustomers?\b|\busers?\b|\borders?\b|\bexports?\b|\bbackups?\b|\bprod(?:uction)?\b|\bpii\b|\bkyc\b|\bpayroll\b|\baccounts?\b|\bsession|\bprofiles?\b|\bsecrets?\b|\bphone|\baddress|\bemails?\b|客户|用户|订单|手机|电话|身份证|生产|线上|备份|导出|画像|隐私|\bpublic ip\b|公网|\binternet\b)",
    ),
];

/// Secrets written into logs or pages by a setting (`log_credentials`, a header captured, the
/// parameter filter emptied, the whole environment returned or printed).
pub(super) const CREDENTIAL_FORMS9: &[(&str, &str)] = &[
    ("caddy", r"\blog_credentials\b"),
    ("haproxy", r"\bcapture +request +header +(?:authorization|cookie|x-api-key)\b"),
    ("traefik", concat!(r"\bdefaultmode", set_to!(), r"keep\b[^\n]{0,40}\b(?:authorization|cookie)\b")),
    ("rails", r"\bfilter_parameters *= *\[ *\]"),
    (
        "laravel",
        r"\bapp_debug *= *true\b[^\n]*(?:线上|生产|\bprod|\blive\b)|(?:线上|生产|\bprod\w*)[^\n]{0,40}\bapp_debug *= *true\b",
    ),
    (
        "environment printed",
        // Returned by a handler; printed, only where it runs in production or is kept there.
        concat!(
            r"\b(?:res\.(?:json|send)|jsonify|return +json\.dumps)\( *(?:dict\( *)?(?:os\.environ|process\.env) *\)?(?:$|[^.\[\w])",
            r"|\b(?:print|pprint|puts|console\.log)\( *(?:dict\( *|\{[^\n]{0,40}\b(?:in|of) +)?(?:os\.environ|process\.env)(?:\.items\(\))? *\)?(?:$|[^.\[\w])[^\n]*(?:\bprod|\bkeep\b|线上|生产|保留)",
        ),
    ),
    (
        "environment returned",
        r"(?:返回|暴露|展示给)[^\n。；]{0,10}(?:全部|所有|完整)的?环境变量|\b(?:returns|exposes|serves) (?:all|every|the full|the whole)(?: of)?(?: the)?(?: process'?s?)? (?:environment variables|env vars)\b",
    ),
    ("masking off", r"\bprints? secret values\b|\bno longer (?:masked|redacted)\b|不再(?:脱敏|打码)"),
    (
        "logged headers",
        r"(?:记录|打印|输出)[^\n。；]{0,12}(?:完整|全部)?的?请求头[^\n。；]{0,6}(?:含|包括) *authorization",
    ),
    (
        "ci logs",
        r"\becho +[\x22'][^\x22'\n]{0,40}\$\( *(?:gh +auth +token|glab +variable +get|vault +(?:kv +get|read)|op +read|gcloud +auth +print-access-token|aws +configure +get)\b",
    ),
];

/// What narrows a match to something harmless (joins `SCOPED`): a pool, bucket or cluster of CI
/// or scratch, data that is the recipient's own, an example file of names only.
pub(super) const TOOL9_SCOPED: &[(&str, &str)] = &[
    (
        "destructive",
        r"\bthe (?:ci|test|scratch|staging|dev) (?:pool|bucket|cluster|namespace|database|db|vm|volume|project)\b|\b(?:ci|scratch|sandbox|tmp|throwaway)-[a-z0-9_-]+",
    ),
    ("destructive", r"\b(?:pr|preview|review)-\$"),
    ("exfiltration", r"\bno (?:names|pii|personal data|customer data|phones?)\b|\b(?:counts|totals|averages?) per\b"),
    (
        "exfiltration",
        r"(?:他们|客户|对方|用户)自己的|\btheir own (?:data|orders|records|account)\b|\.env\.(?:example|sample|template|dist)\b|\bplaceholders? only\b",
    ),
];

/// What cuts a match's output down to something harmless whatever the environment, production
/// included (joins the scopes, but read before the production check): a secret's output reduced
/// to names, keys or a fingerprint, or captured into a password variable for one command.
pub(super) const TOOL9_REDUCED: &[(&str, &str)] = &[(
    "credential_read",
    concat!(
        r"\|\s*jq +(?:-[a-z]+ +)*[\x22'][^\x22'\n]*(?:\bkeys\b|\bdel\()[^\x22'\n]*[\x22']|\|\s*(?:findstr|select-string)\b[^\n]*\b(?:target|name)\b",
        r"|\|\s*(?:sha\d*sum|md5sum|b2sum)\b|(?:^|[\s;&(])(?:export +)?[a-z_]*(?:password|passwd|pwd|token|secret)[a-z_]*= *[\x22']?\$\(",
        r"|\bno (?:keys|secrets|passwords|values)\b|\b(?:names|keys|aliases) only\b|\bwithout (?:decoding|the values|values)\b|--users +skip\b",
        r"|(?:只|仅)(?:记录|导出|看|列出|保留)[^\n。；]{0,12}(?:名称|名字|变量名|键名|目标名)|不(?:含|导出|包括)(?:任何)?(?:用户|密码|密钥|哈希|值)",
    ),
)];

/// What spares a match that contains it (joins `EXCEPTIONS`): a fetched script pinned by its
/// checksum, a password copied to the clipboard.
pub(super) const TOOL9_EXCEPTIONS: &[(&str, &str)] = &[
    ("pipe_to_shell", r#"\bchecksum *= *["']?(?:sha|md5)"#),
    // A password manager's secret copied to the clipboard, its intended use.
    ("credential_read", r"\b(?:lpass|pass|gopass) +show\b[^\n]*(?:\s-c\b|--clip\b)"),
];
