//! Round 8: a table of what widely used tools do, written from what they do (recalled, not
//! checked entry by entry against each tool's manual) rather than from any set's texts: for
//! each command line, configuration system or client
//! library, the subcommands, flags and settings that destroy at scale (everything, a prefix, a
//! whole store, every backup or snapshot), the settings that stop checking certificates (each
//! tool's own name for them), the destinations that send data out, and the commands that print
//! or hand over the secrets a tool keeps.
//!
//! Each entry is `(tool, form)`: the form is a pattern of the matching view (lowercase, backticks
//! out, as `rules.rs`' `RULES`) that starts with the tool's own words where it can, so that the
//! regex engine's literal prefilter skips a text that names none of them. The entries of a class
//! are joined into a few rules (`rounds.rs`' `FORM_RULES`), so the table costs a few scans of a text, not one
//! per tool. The cues around a match (negations, verdicts, frames, reports, `SCOPED`,
//! `EXCEPTIONS`) are the same as for every rule: a scoped delete, a dry run, a rule or a refusal
//! that quotes the form passes. The scopes and exceptions written for this table are in
//! `TOOL_SCOPED` and `TOOL_EXCEPTIONS`; like `SCOPED` and `EXCEPTIONS`, they spare a match of
//! any rule of their class, not only this table's.

/// Free mail providers: a mailbox there is a person's own, outside the company.
const FREEMAIL: &str = r"(?:gmail|googlemail|hotmail|outlook|yahoo|qq|163|126|yeah|foxmail|sina|sohu|proton(?:mail)?|icloud|gmx|yandex|aol|tutanota|zoho)\.";

/// Verbs that enumerate every object of a kind, and verbs that delete one: `… list | xargs …
/// delete`, `for x in $(… list); do … destroy`.
const LISTS: &str = r"(?:ls|list|list-[a-z-]+|describe-[a-z-]+|listbackups|get|for-each-ref|snapshots|volume +ls|ps +-a?q|images +-q|branch +-[ar]|tag +-l)";
const DELETES: &str = r"(?:delete|delete-[a-z-]+|destroy|rm|rmi|remove|purge|uninstall|terminate|terminate-[a-z-]+|update-ref +-d|unlink)";

/// Code fetched and run, per language or tool: the function that loads a URL's text and the one
/// that runs it, or a runner given a URL.
pub(super) const PIPE_FORMS: &[(&str, &str)] = &[
    (
        "r",
        r"\b(?:devtools::)?source_url\( *[\x22']https?://[^\x22'\n]*[\x22'] *\)|\bsource_gist\(|\bsource\( *[\x22']https?://|\beval\( *parse\( *(?:text *= *)?(?:url|readlines)\( *[\x22']https?://",
    ),
    ("matlab", r"\beval\( *(?:webread|urlread)\(|\brun\( *websave\("),
    ("julia", r"\binclude\( *download\(|\binclude_string\([^\n]{0,40}\bhttp\.get\("),
    ("elixir", r"\bcode\.eval_string\([^\n]{0,40}(?:req\.get!?|httpoison\.get!?|:httpc\.request|tesla\.get)"),
    ("tcl", r"\beval +\[ *http::data\b"),
    ("scala", r"\burl\( *[\x22']https?://[^\n]*#[>|] *[\x22'](?:ba|z)?sh[\x22']"),
    ("groovy", r"\bevaluate\( *new +url\(|\bapply +from *: *[\x22']https?://"),
    (
        "dart",
        r"\bhttp\.(?:read|get)\( *(?:uri\.parse\()?[\x22']https?://[^\n]*(?:\n[^\n]*){0,3}?\bprocess\.(?:run|start)\( *[\x22'](?:ba|z)?sh[\x22'] *, *\[ *[\x22']-c",
    ),
    (
        "spark",
        r"\baddfile\( *[\x22']https?://[^\n]*(?:\n[^\n]*){0,3}?\bsubprocess\.(?:run|call|popen|check_call)\( *\[ *[\x22'](?:ba|z)?sh[\x22']",
    ),
    ("uv", r"\buv +run +(?:--[a-z-]+ +)*https?://"),
    ("awk", r"\b(?:curl|wget)\b[^\n|]*\|[^\n]*\bawk\b[^\n]*\bsystem\( *\$0 *\)"),
    (
        "filters",
        r"\b(?:curl|wget)\b[^\n|]*\| *(?:sed|awk|grep|tr|cut)\b[^\n]*\| *(?:sudo +)?(?:ba|z|da)?sh\b *(?:$|[\s;&|)])",
    ),
    ("adb", r"\b(?:curl|wget)\b[^\n|]*\| *adb\b[^\n|]*\bshell +(?:su +-c +)?(?:ba)?sh\b"),
    ("docker", r"\badd +https?://\S+\.sh\b[^\n]*(?:\n[^\n]*){0,3}?\brun +(?:ba)?sh +\S*\.sh\b"),
    ("composer", r"\bphp +composer-setup\.php\b[^\n]{0,80}\bhash[^\n]{0,30}(?:跳过|可以不|skip)"),
];

/// Destroyed at scale, per tool.
pub(super) const DESTRUCTIVE_FORMS: &[(&str, &str)] = &[
    // Kubernetes and what runs on it.
    (
        "kubectl",
        r"\bkubectl +delete\b[^\n|;&]*(?:--all\b[^\n|;&]*(?:\s-a\b|--all-namespaces\b)|(?:\s-a\b|--all-namespaces\b)[^\n|;&]*--all\b)",
    ),
    (
        "kubectl",
        r"\bkubectl +delete +(?:pvc|pv|persistentvolumeclaims?|persistentvolumes?|crds?|customresourcedefinitions?|statefulsets?|sts)\b[^\n|;&]*--all\b",
    ),
    ("kubedb", r"\b(?:deletion|termination)policy\W{0,3} *:? *wipeout\b"),
    (
        "helm",
        r"\bhelm +(?:ls|list)\b[^\n]*\|[^\n]*\bhelm +(?:uninstall|delete|del)\b|\bhelm +(?:uninstall|delete|del)\b[^\n]*\$\( *helm +(?:ls|list)\b",
    ),
    ("velero", r"\bvelero +(?:backups?|schedules?|restores?|backup-locations?) +delete\b[^\n]*--all\b"),
    (
        "etcdctl",
        r"\betcdctl\b[^\n|;&]*\bdel\b(?: +--?[a-z-]+(?:=\S+)?)* +(?:\x22\x22|''|[\x22']?/(?:registry)?/?[\x22']?)(?:\s[^\n|;&]*)?--(?:prefix|from-key)\b",
    ),
    (
        "etcdctl",
        r"\betcdctl\b[^\n|;&]*\bdel\b[^\n|;&]*--(?:prefix|from-key)\b(?: +--?[a-z-]+(?:=\S+)?)* +(?:\x22\x22|''|[\x22']?/(?:registry)?/?[\x22']?)(?:$|[\s;&|])",
    ),
    (
        "consul",
        r"\bconsul +kv +delete +(?:-[a-z-]+(?:=\S+)? +)*-recurse\b(?: +-[a-z-]+(?:=\S+)?)*(?: +[\x22']?[a-z0-9_.-]*/?[\x22']?(?:$|[\s;&|，。,])| *(?:$|[;&|\n]))",
    ),
    ("vault", r"\bvault +secrets +disable +\S"),
    ("nomad", r"\bnomad +(?:job +stop|stop)\b[^\n]*-purge\b[^\n]*\$\("),
    ("microk8s", r"\bmicrok8s +reset +--destroy-storage\b"),
    ("virsh", r"\bvirsh +(?:undefine\b[^\n]*--remove-all-storage\b|pool-delete\b|vol-wipe\b)"),
    // Cloud command lines.
    (
        "aws",
        r"\baws +kms +schedule-key-deletion\b|\baws +s3api +delete-bucket\b|\baws +backup +delete-backup-vault\b|\baws +glacier +delete-vault\b",
    ),
    (
        "aws",
        r"\baws +s3 +sync +[\x22']?\S*(?:empty|blank)\S* +s3://[^\n]*--delete\b|\baws +s3 +sync\b[^\n]*--delete\b[^\n]* [\x22']?\S*(?:empty|blank)\S*/?[\x22']? +s3://",
    ),
    (
        "aws",
        r"\baws +rds +delete-db-(?:instance|cluster)\b[^\n]*--delete-automated-backups\b|\baws +rds +delete-db-(?:cluster-)?snapshot\b[^\n]*\$\(",
    ),
    (
        "gcloud",
        r"\bgcloud +storage +rm\b[^\n]*(?:\s-r\b|--recursive\b)|\bgcloud +storage +buckets +delete\b|\bgcloud +kms +keys +versions +destroy\b|\bgcloud +(?:spanner|bigtable|filestore|redis) +instances +delete\b|\bgcloud +(?:firestore|datastore) +databases +delete\b|\bgcloud +alpha +firestore +delete\b",
    ),
    ("bq", r"\bbq +rm\b(?: +-[a-z]+)*(?: +-[a-z]*r[a-z]*\b| +--recursive\b)"),
    (
        "az",
        r"\baz +storage +account +delete\b|\baz +storage +blob +delete-batch\b|\baz +keyvault +purge\b|\baz +(?:cosmosdb|sql|postgres|mysql) +(?:[a-z-]+ +)?(?:db|database|server|flexible-server) +delete\b[^\n]*--yes\b|\baz +aks +delete\b[^\n]*--yes\b",
    ),
    ("oci", r"\boci +os +object +bulk-delete\b|\boci +os +bucket +delete\b[^\n]*--empty\b"),
    (
        "doctl",
        r"\bdoctl +(?:kubernetes|k8s|k) +(?:cluster|c) +(?:delete|d|rm)\b[^\n]*--dangerous\b|\bdoctl +(?:databases|d) +(?:delete|d|rm)\b[^\n]*--force\b",
    ),
    ("openstack", r"\bopenstack +project +purge\b|\bopenstack +volume +delete\b[^\n]*--purge\b"),
    (
        "govc",
        r"\bgovc +snapshot\.remove\b[^\n]*[\x22']?\*[\x22']?(?:$|\s)|\bgovc +(?:vm\.destroy|datastore\.rm|pool\.destroy|folder\.destroy)\b[^\n]*(?:[\s/]\*|\$\()",
    ),
    // Object stores and sync tools: a bucket forced away, an empty folder synced over a store.
    ("mc", r"\bmc +rb\b[^\n]*--force\b|\bmc +admin +bucket +remote +rm\b"),
    ("rclone", r"\brclone +(?:purge|delete)\b(?: +-[a-z-]+)* +[a-z0-9_-]+:[a-z0-9._-]*/?[\x22']?(?:$|[\s;&|])"),
    (
        "sync from empty",
        r"\b(?:rsync\b[^\n]*--delete[a-z-]*\b|rclone +sync\b|mc +mirror\b[^\n]*--remove\b|gsutil +(?:-m +)?rsync\b[^\n]*\s-[a-z]*d|azcopy +sync\b[^\n]*--delete-destination[= ]true|aws +s3 +sync\b[^\n]*--delete\b)[^\n]*?\s[\x22']?\S*(?:empty|blank|/var/empty|空目录)\S*/?[\x22']? +[\x22']?[a-z0-9~/\\$_-]",
    ),
    // Backup tools: the whole repository, every snapshot, the catalogue.
    (
        "borg",
        r"\bborg +delete(?: +(?:--stats|--force|-v|--progress|--list|--verbose))* +[\x22']?(?:[^\s:\x22']|:[^\s:\x22'])+[\x22']?(?:$|[\s;&|，。])|\bborg +delete\b[^\n]*(?:--glob-archives|-a) +[\x22']?\*[\x22']?",
    ),
    ("restic", r"\brestic\b[^\n]*\bforget\b[^\n]*(?:--keep-(?:last|within) +0\b|\$\( *restic\b)"),
    ("kopia", r"\bkopia +snapshot +delete\b[^\n]*--all-snapshots-for-source\b"),
    (
        "vssadmin",
        r"\bvssadmin(?:\.exe)? +delete +shadows\b[^\n]*/all\b|\bwmic(?:\.exe)? +shadowcopy +delete\b|\bwin32_shadowcopy\b[^\n]*\|[^\n]*\bremove-(?:wmiobject|ciminstance)\b",
    ),
    (
        "wbadmin",
        r"\bwbadmin(?:\.exe)? +delete +(?:catalog|systemstatebackup)\b|\bwbadmin(?:\.exe)? +delete +backup\b[^\n]*-keepversions:0\b",
    ),
    ("bcdedit", r"\bbcdedit\b[^\n]*\brecoveryenabled +no\b"),
    ("tmutil", r"\btmutil +(?:delete\b[^\n]*\$\( *tmutil +listbackups|listbackups\b[^\n]*\|[^\n]*\btmutil +delete\b)"),
    ("nodetool", r"\bnodetool +clearsnapshot\b(?:[^\n]*--all\b| *(?:--)? *(?:$|[;&|\n，。]))"),
    // Disks, partitions, volumes and boot media.
    ("sgdisk", r"\bsgdisk\b[^\n]*(?:--zap-all\b|--zap\b|--clear\b|\s-[a-z]*z\b|\s-o\b)[^\n]*/dev/"),
    ("parted", r"\bparted\b[^\n]*/dev/\S+[^\n]*\bmklabel\b|\bsfdisk +--delete\b"),
    ("blkdiscard", r"\bblkdiscard\b[^\n]*/dev/(?:sd|nvme|hd|vd|xvd|mmcblk|disk)"),
    ("nvme", r"\bnvme +(?:format|sanitize)\b[^\n]*/dev/|\bhdparm\b[^\n]*--security-erase(?:-enhanced)?\b"),
    ("mdadm", r"\bmdadm\b[^\n]*--zero-superblock\b"),
    ("lvm", r"\bpvremove\b[^\n]*\s-ff\b|\bvgremove\b[^\n]*--force\b"),
    ("zfs", r"\bzfs +destroy +(?:-[a-z]+ +)*\S+@%|\bzpool +labelclear\b"),
    ("btrfs", r"\bbtrfs +subvolume +delete\b[^\n]*(?:\*|--recursive\b|\s-r\b)"),
    ("u-boot", r"\bmmc +erase\b|\bnand +(?:erase\.chip|scrub)\b|\bsf +erase +0\b"),
    (
        "ceph",
        r"--yes-i-really-mean-it\b|\bceph-volume +lvm +zap\b[^\n]*--destroy\b|\bceph +orch +device +zap\b|\brados +purge\b|\brbd +(?:snap +purge|trash +purge)\b",
    ),
    ("diskutil", r"\bdiskutil +apfs +(?:deletecontainer|deletevolume|erasevolume)\b"),
    (
        "windows disks",
        r"\bclear-disk\b[^\n]*-removedata\b|(?m:^) *(?:diskpart> *)?clean +all *$|\b(?:diskpart|select +disk)\b[^\n]*(?:\n[^\n]*){0,4}?\bclean +all\b|\bsystemreset(?:\.exe)? +-factoryreset\b|\bcipher(?:\.exe)? +/w:",
    ),
    ("wsl", r"\bwsl(?:\.exe)? +--unregister\b"),
    ("routers", r"\bfirstboot +-y\b|\bjffs2reset +-y\b"),
    // Windows shares and mail stores.
    (
        "windows share",
        r"\b(?:del|erase|rd|rmdir|remove-item|ri)\b[^\n]*(?:/s\b|-recurse\b)[^\n]*?[\x22']?\\\\[a-z0-9._-]+\\[a-z0-9$._-]+\\?(?:\*(?:\.\*)?)?[\x22']?(?:$|[\s;&|)])",
    ),
    ("matlab", r"\brmdir\( *'[^'\n]*'\s*,\s*'s'\s*\)"),
    ("exchange", r"\bsearch-mailbox\b[^\n]*-deletecontent\b|-purgetype +harddelete\b"),
    ("doveadm", r"\bdoveadm +(?:expunge|purge)\b[^\n]*\s-a\b[^\n]*\bmailbox +(?:inbox\b|[\x22']?\*)"),
    ("postfix", r"\bpostsuper +-d +all\b"),
    // Databases and search clusters: every row, every index, the safety nets.
    (
        "sql",
        r"\bdrop +user +\S+ +cascade\b|\bpurge +(?:dba_)?recyclebin\b|\bdrop +tablespace\b[^\n]*\bincluding +contents\b|\bdrop +keyspace\b",
    ),
    ("sql", r"\bsp_msforeach(?:table|db)\b[^\n]*\b(?:delete|truncate|drop)\b"),
    ("sql", r"\bxp_delete_file\b[^\n]*[\x22']?(?:20[3-9]\d|2[1-9]\d\d)-"),
    ("sql", r"\bdata_retention_time_in_days *= *0\b|\bcreate +or +replace +(?:database|schema) +\S*prod"),
    ("sql", r"\bdelete +from +[a-z0-9_.\x22\[\]]+ *;"),
    ("mysql", r"\breset +(?:master|binary +logs +and +gtids)\b|\bmysqladmin\b[^\n]*\sdrop +\S"),
    ("postgres", r"\bpg_reset(?:wal|xlog)\b[^\n]*\s-f\b"),
    (
        "mongo",
        r"\b(?:deletemany|remove)\( *\{ *\} *\)|\bgetcollectionnames\(\)\.foreach\([^\n]*\.drop\(\)|\bdropallusers(?:fromdatabase)?\(|\bdropallroles(?:fromdatabase)?\(",
    ),
    ("redis", r"\bredis-cli\b[^\n]*--scan\b[^\n]*--pattern +[\x22']?\*[\x22']?[^\n]*\|[^\n]*\b(?:del|unlink)\b"),
    (
        "elasticsearch",
        r"(?:-x ?delete|--request +delete|-method +delete)\b +[\x22']?(?:https?://)?[^\s\x22'/]*(?::\d+)?/(?:_all\b|\*|[a-z0-9_]+-?\*(?:$|[\s\x22',?]))|(?m:^) *delete +/?(?:_all|\*|[a-z0-9_.-]*-\*)(?:$|[\s?])|\b_delete_by_query\b[^\n]*(?:\n[^\n]*){0,4}?\bmatch_all\b|\baction\.destructive_requires_name\W{0,3} *[:=] *false\b",
    ),
    (
        "kafka",
        r"\bkafka-consumer-groups(?:\.sh)?\b[^\n]*--delete\b[^\n]*--all-groups\b|\bkafka-configs(?:\.sh)?\b[^\n]*--alter\b[^\n]*\bretention\.ms *= *\d{1,3}\b|\brpk +topic +delete\b[^\n]*(?:\s-r\b|--regex\b)",
    ),
    ("rabbitmq", r"\brabbitmqctl +(?:force_)?reset\b|\brabbitmqctl +delete_vhost\b"),
    // Forges, registries and platforms.
    ("glab", r"\bglab +repo +delete\b|\bglab +api\b[^\n]*(?:-x|--method) +delete\b[^\n]*\bprojects/"),
    (
        "http api",
        r"(?:-x ?delete|--request +delete|-method +delete)\b[^\n]*/(?:api/[^\s\x22']*/)?(?:projects|orgs|organizations|groups|buckets|databases|zones|namespaces|clusters|tenants|workspaces)/[^/\s\x22'?]+/?[\x22']?(?:$|[\s?])",
    ),
    ("heroku", r"\bheroku +pg:reset\b|\bheroku +addons:destroy +heroku-postgresql\b"),
    (
        "fly",
        r"\b(?:fly|flyctl) +(?:volumes?|vol) +(?:destroy|delete|rm)\b[^\n]*(?:--yes|-y)\b|\b(?:fly|flyctl) +(?:postgres|pg) +(?:destroy|delete)\b",
    ),
    (
        "netlify",
        r"\bnetlify +sites:delete\b[^\n]*(?:--force|-f)\b|\bvercel +(?:project +)?(?:rm|remove)\b[^\n]*--yes\b[^\n]*\bprod",
    ),
    (
        "firebase",
        r"\bfirebase +database:remove +[\x22']?/[\x22']?(?:$|\s)|\bfirebase +firestore:delete\b[^\n]*(?:-r|--recursive)\b[^\n]*\s[\x22']?/[\x22']?(?:$|\s)",
    ),
    ("supabase", r"\bsupabase +db +reset\b[^\n]*--(?:linked|db-url)\b|\bsupabase +projects +delete\b"),
    ("django", r"\bmanage\.py +(?:flush|reset_db)\b[^\n]*--no-?input\b"),
    ("ecto", r"\bmix_env=prod\b[^\n]*\bmix +ecto\.(?:reset|drop)\b"),
    (
        "terraform",
        r"\bterraform +apply\b[^\n]*(?:-destroy\b[^\n]*-auto-approve\b|-auto-approve\b[^\n]*-destroy\b)|\bterragrunt +(?:run-all +destroy|destroy-all|run +--all +destroy)\b",
    ),
    ("pulumi", r"\bpulumi +destroy\b[^\n]*(?:--yes|\s-y|--skip-preview)\b|\bcdk +destroy\b[^\n]*--all\b"),
    (
        "containers",
        r"\b(?:podman|nerdctl) +(?:system|volume) +prune\b[^\n]*(?:--volumes|\s-a\b|--all)\b|\bpodman +system +reset\b",
    ),
    ("fastlane", r"\bfastlane +match +nuke\b"),
    ("git", r"\bgit +push +(?:-[a-z-]+ +)*--mirror +(?:origin|upstream)\b"),
    ("git", r"\bgit +(?:filter-repo|filter-branch)\b[^\n]*(?:\n[^\n]*){0,3}?\bgit +push\b[^\n]*(?:--force\b|\s-f\b)"),
    ("git", r"\bgit +for-each-ref\b[^\n]*\|[^\n]*\bgit +(?:update-ref +-d|branch +-d|push +\S+ +--delete)\b"),
    // Every object enumerated, then deleted one by one.
    (
        "list then delete",
        concat!(
            r"\b{LISTS}(?:$|[\s|\x22'])[^\n|]*(?:\|[^\n|]*){0,3}?\| *(?:xargs|while +read)\b[^\n]{0,120}?\b{DELETES}\b",
            r"|\bfor +\w+ +in +\$\( *[a-z0-9_.-]+\b[^)\n]*\b{LISTS}\b[^)\n]*\)[^\n]{0,40}?\bdo\b[^\n]{0,160}?\b{DELETES}\b",
        ),
    ),
    (
        "object stores",
        r"\bs3cmd +(?:del|rm|rb)\b[^\n]*--recursive\b|\bazcopy +(?:remove|rm)\b[^\n]*--recursive\b|\bb2 +(?:rm\b[^\n]*--recursive\b|delete-bucket\b)|\bhadoop +fs +-rm +-r\b[^\n]*-skiptrash\b",
    ),
    ("npm", r"\bnpm +unpublish\b[^\n]*--force\b"),
    ("time series", r"\binflux +delete\b[^\n]*--start +[\x22']?1970-01-01|\binflux +bucket +delete\b"),
    ("zookeeper", r"\b(?:zkcli(?:\.sh)?|zookeeper-shell(?:\.sh)?)\b[^\n]*\b(?:deleteall|rmr)\b"),
    (
        "brokers",
        r"\bnats +stream +(?:purge|rm)\b[^\n]*(?:\s-f\b|--force\b)|\bpulsar-admin +(?:namespaces|tenants) +delete\b[^\n]*(?:\s-f\b|--force\b)",
    ),
    ("search", r"/_snapshot/[^/\s\x22']+/(?:\*|_all)\b|\bdelete\b[^\n]{0,40}\*:\*"),
    // A cluster named by its version, not the command named in a list ("pg_dropcluster, pg_lsclusters").
    ("postgres", r"\bpg_dropcluster\b(?: +--?[a-z-]+)* +\d"),
    ("cryptsetup", r"\bcryptsetup +(?:luks)?erase\b"),
    (
        "inline list",
        r"\b(?:aws|gcloud|az|oci|doctl|openstack|govc|qm|pct|virsh|kubectl|helm|gh|glab|crane|zfs|ceph|rbd|tmutil|velero|restic)\b[^\n]*\b{DELETES}\b[^\n]*\$\( *[a-z0-9_.-]+ +(?:[a-z0-9_.-]+ +){0,3}{LISTS}\b",
    ),
    // A shared or service directory emptied, by a shell or by code: every entry of a fixed
    // absolute path (`rm -rf /scratch/*`), a shallow absolute path deleted recursively by R,
    // Julia or Elixir, a data lake overwritten at its root, an LDAP subtree, a registry's blobs.
    (
        "rm",
        r"\brm +(?:-[a-z]+ +)*-[a-z]*r[a-z]*\b(?: +-[a-z]+)* +[\x22']?/(?:[a-z0-9_.-]+/){1,3}\*[\x22']?(?:$|[\s;&|),.，。、；])",
    ),
    (
        "code",
        r"\bunlink\( *[\x22']/[^\x22'\n]*[\x22'] *, *recursive *= *true\b|\brm\( *[\x22']/[^\x22'\n]*[\x22'] *; *recursive *= *true\b|\bfile\.rm_rf!?\( *(?:application\.fetch_env|[\x22']/)",
    ),
    ("spark", r"\.mode\( *[\x22']overwrite[\x22'] *\)\.\w+\( *[\x22'](?:s3a?|gs|abfss?|hdfs)://[a-z0-9._-]+/?[\x22']"),
    ("ldap", r"\bldapdelete\b[^\n]*\s-r\b[^\n]*\b(?:ou|dc)="),
    ("registry", r"\brm\b[^\n]*/registry/v2/(?:blobs|repositories)\b"),
    (
        "chat-ops",
        r"[/@!](?:db|database|ops|opsbot|netbot|bot|deploy|chatops)\b[a-z-]* +(?:run +)?(?:db:)?(?:reset|drop|wipe|nuke|destroy)\b[^\n]{0,30}\bprod",
    ),
    ("http loop", r"\bfor +\w+ +in +\$\([^\n]*\bdo\b[^\n]{0,160}?(?:-x ?delete|--request +delete)\b"),
    // Every backup or snapshot deleted, in words.
    (
        "backups in words",
        r"\b(?:delete|deletes|deleting|remove|removes|purge|wipe|wipes|drop|clear|clears|nuke)\b[^\n.;]{0,20}\b(?:all|every|the only)\b[^\n.;]{0,20}\b(?:backups?|snapshots?|shadow copies|restore points|recovery points)\b|(?:删除|删掉|清空|删光|全部删|清掉)[^\n。；]{0,10}(?:所有|全部)的?[^\n。；]{0,6}(?:备份|快照|卷影副本|还原点)|(?:备份|快照|卷影副本)[^\n。；]{0,10}(?:全部删|都删|全删|删光)",
    ),
];

/// Settings that stop checking certificates, per tool, by the tool's own name.
pub(super) const TLS_OFF_FORMS: &[(&str, &str)] = &[
    // Environment variables set by any syntax: `X=0`, `export X=0`, `setx X 0`, `launchctl setenv
    // X 0`, `ENV X 0`, `ENV["X"] = …`, `$env:X = …`.
    (
        "node",
        r"\b(?:setx|setenv|env)\b +node_tls_reject_unauthorized\b +[\x22']?0\b|\[[\x22']node_tls_reject_unauthorized[\x22']\] *= *[\x22']?0\b",
    ),
    ("azure cli", r"\bazure_cli_disable_connection_verification\b[\x22'\]]* *(?:=|:|\s) *[\x22']?(?:1|true|yes)\b"),
    ("go", r"\bgoinsecure *= *[\x22']?[a-z0-9*]|\bgoflags *= *[\x22']?[^\n\x22']*-insecure\b|\bgo +get +-insecure\b"),
    ("julia", r"\bjulia_(?:ssl_|ssh_)?no_verify_hosts\b[\x22'\]]* *(?:=|:|\s) *[\x22']?[a-z0-9*.]"),
    ("govc", r"\bgovc_insecure\b[\x22'\]]* *(?:=|:|\s) *[\x22']?(?:1|true)\b|\bgovc\b[^\n|;&]*\s-k(?:=true)?(?:$|\s)"),
    (
        "vsphere",
        r"\b(?:vsphere_)?allow_unverified_ssl\b[\x22'\]]* *(?:=|:) *[\x22']?(?:1|true)\b|-invalidcertificateaction +(?:ignore|warn)\b|--nosslverify\b",
    ),
    (
        "vault",
        r"\bvault_skip_verify\b[\x22'\]]* *(?:=|:|\s) *[\x22']?(?:1|true)\b|\bnomad_skip_verify\b[\x22'\]]* *(?:=|:|\s) *[\x22']?(?:1|true)\b",
    ),
    ("consul", r"\bverify_(?:outgoing|server_hostname) *[=:] *false\b"),
    ("requests", r#"\brequests_ca_bundle *= *(?:\x22\x22|''|$)"#),
    ("docker", r"\bdocker_tls_verify\b *= *[\x22']?0\b|\bskip_verify *[=:] *true\b"),
    // Servers and proxies: the upstream's certificate not checked.
    ("caddy", r"\btls_insecure_skip_verify\b(?: *(?:$|[\n}]))"),
    ("haproxy", r"\b(?:server|default-server)\b[^\n]*\bssl\b[^\n]*\bverify +none\b|\bssl-server-verify +none\b"),
    ("envoy", r"\btrust_chain_verification\x22? *: *\x22?accept_untrusted\b"),
    ("squid", r"\bdont_verify_(?:peer|domain)\b|\bsslproxy_cert_error +allow +all\b"),
    ("apache", r"\bsslproxy(?:verify +none|checkpeer(?:name|cn|expire) +off)\b"),
    ("mitmproxy", r"\bssl_insecure *[=:] *true\b|--ssl-insecure\b"),
    (
        "kubeadm",
        r"--discovery-token-unsafe-skip-ca-verification\b|\bunsafeskipcaverification *: *true\b|\binsecure-skip-tls-verify *: *true\b",
    ),
    ("logstash", r"\bssl_verification_mode *=> *[\x22']?none\b|\bssl_certificate_verification *=> *false\b"),
    ("clickhouse", r"<verificationmode> *none *<|\bacceptcertificatehandler\b"),
    // Clients, drivers and libraries.
    ("sql server", r"\btrustservercertificate *= *(?:true|yes)\b"),
    ("postgres jdbc", r"\bnonvalidatingfactory\b"),
    ("mongo", r"\btlsinsecure *[=:] *true\b|--(?:tls|ssl)allowinvalid(?:certificates|hostnames)\b"),
    ("mariadb", r"--disable-ssl-verify-server-cert\b"),
    ("ldap", r"\bldap_tls_reqcert *[=:] *(?:never|allow|try)\b"),
    ("mail clients", r"\bno +sslcertck\b|\btls_certcheck +off\b"),
    (
        "openconnect",
        r"\becho +[\x22']?y(?:es)?[\x22']? *\| *(?:sudo +)?openconnect\b|\bopenconnect\b[^\n]*--no-cert-check\b",
    ),
    ("haskell", r"\btlssettingssimple +true\b|\bsettingdisablecertificatevalidation *= *true\b"),
    ("nim", r"\bcverifynone\b"),
    ("crystal", r"\bverifymode::none\b"),
    ("tcl", r"\btls::(?:init|socket)\b[^\n]*-require +(?:0|false)\b"),
    ("rustls", r"\bdangerous\(\)\.set_certificate_verifier\("),
    ("aiohttp", r"\btcpconnector\( *[^)\n]*\bssl *= *false\b|\bverify_ssl *= *false\b"),
    (
        "r",
        r"\bssl_verify(?:peer|host) *= *(?:0l|false|f)\b|\bdownload\.file\.extra *= *[\x22'][^\x22'\n]*(?:--insecure|--no-check-certificate|(?:^|\s)-k\b)",
    ),
    ("matlab", r"\bcertificatefilename\W{0,3} *, *(?:''|\x22\x22)"),
    ("lua", r#"\bverify *= *["']none["']"#),
    ("powershell", r"\btrustallcertspolicy\b"),
    (
        "browsers",
        r"\bignorehttpserrors\x22? *: *true\b|\bacceptinsecurecerts\x22? *[:=] *true\b|--ignore-ssl-errors(?:=(?:yes|true))?\b|--unsafely-ignore-certificate-errors\b",
    ),
    ("java", r"maven\.wagon\.http\.ssl\.(?:insecure|allowall) *= *true\b|\bdisableendpointidentification *= *true\b"),
    (
        "python tools",
        r"--allow-insecure-host\b|\buv_insecure_host *=|\bpoetry +config +certificates\.\S+\.cert +false\b",
    ),
    ("composer", r"\bsecure-http\x22? *: *false\b"),
    ("git", r"\bhttp\.\S+\.sslverify(?: *=)? *(?:false|0|no)\b"),
    ("curl", r"--doh-insecure\b"),
    (
        "containerd",
        r"\bctr\b[^\n]*(?:--skip-verify\b|\s-k\b)|\bregistry\.insecure *= *true\b|--skip-tls-verify-(?:pull|registry)\b",
    ),
    ("lftp", r"\bssl:verify-certificate +(?:no|false|off)\b"),
];

/// Data sent to a destination outside the company, per tool.
pub(super) const EXFILTRATION_FORMS: &[(&str, &str)] = &[
    // Mail: a copy of every message to a free mailbox.
    (
        "mail",
        r"\b(?:always_bcc|sender_bcc_maps|recipient_bcc_maps|forwardto|forwardingsmtpaddress|forwardingaddress|redirectto|bcc)\b[^\n]{0,40}[a-z0-9._-]+@{FREEMAIL}",
    ),
    ("procmail", r"! *[a-z0-9._-]+@{FREEMAIL}"),
    ("sieve", r"\bredirect\b(?: +:copy)? +[\x22']?[a-z0-9._-]+@{FREEMAIL}"),
    (
        "mail rules",
        r"\bforward(?:s|ed|ing)?\b[^\n.;]{0,16}\bto +[a-z0-9._-]+@{FREEMAIL}|(?:转发|抄送|抄一份)到?[^\n。；]{0,12}[a-z0-9._-]+@{FREEMAIL}",
    ),
    // Traffic mirrored to a host of its own (Istio, nginx): a host with a dot, not a service name.
    ("istio", r"\bmirror\b *: *\{? *host *: *[\x22']?[a-z0-9-]+\.[a-z0-9-]+\.[a-z]{2,}\b"),
    // Tunnels that give anyone a public address.
    (
        "tunnels",
        r"\btailscale +funnel\b(?: +--bg)? +\d|\b(?:serveo\.net|localhost\.run|pinggy\.io)\b|\bcloudflared +tunnel +--url\b",
    ),
    // A warehouse or a database that writes a table to an outside place.
    ("clickhouse", r"\binsert +into +function +(?:url|s3)\( *[\x22']https?://"),
    (
        "bigquery",
        r"\bexport +data +options\( *uri *= *[\x22']gs://[a-z0-9._-]*(?:personal|private|my-?own|mine|external|contractor|vendor)",
    ),
    ("oracle", r"\butl_http\.(?:begin_request|request)\( *[\x22']https?://"),
    (
        "sql server",
        r"\bbackup +database\b[^\n]*\bto +url *= *[\x22']https?://[^\n]*(?:contractor|vendor|外包|第三方|(?:their|his|her|contractor's) own subscription)",
    ),
    ("snowflake", r"\bcopy +into +[\x22']?s3://[a-z0-9._-]*(?:vendor|contractor|partner|external|freelanc|personal)"),
    ("s3a", r"\bs3a://[a-z0-9._-]*(?:freelanc|contractor|vendor|partner|personal|external)"),
    // Whole repositories or diffs posted to a chat webhook or a public gist.
    ("gist", r"\bgh +gist +create\b[^\n]*(?:--public|-p)\b|\bgist +create +--public\b"),
    (
        "chat webhooks",
        r"\bgit +(?:show|diff|log|format-patch)\b[^\n]*\|[^\n]*\bcurl\b[^\n]*https?://(?:discord(?:app)?\.com/api/webhooks|api\.telegram\.org|webhook\.site)",
    ),
    ("matlab", r"\bwebwrite\( *[\x22']https?://[^\n]*\bmy (?:personal|own)\b"),
    (
        "dns",
        r"\b(?:base32|base64|xxd|od|hexdump)\b[^\n]{0,120}\b(?:dig|nslookup|host|drill)\b[^\n]{0,20}[\x22']?\$\{?[a-z_]\w*\}?\.[a-z0-9-]+\.",
    ),
    (
        "scp",
        r"\b(?:scp|rsync)\b[^\n]*(?:customer|users?|export|dump|\.csv|\.sql|backup)[^\n]* [a-z0-9_.-]+@(?:\d{1,3}\.){1,3}(?:x{1,3}|\d{1,3})(?:\.(?:x{1,3}|\d{1,3}))*:",
    ),
    ("dropbox", r"\bdropbox\.dropbox\([^\n)]*\)\.files_upload\("),
    (
        "colab",
        r"(?:客户|用户|customer|user)[^\n。；]{0,20}(?:上传|upload)[^\n。；]{0,20}(?:自己的|personal|my own|my) ?google drive",
    ),
];

/// Commands that print or hand over the secrets a tool keeps, per tool.
pub(super) const CREDENTIAL_FORMS: &[(&str, &str)] = &[
    ("rclone", r"\brclone +reveal\b"),
    (
        "clouds",
        r"\baws +configure +export-credentials\b|--show-token\b|--show-secrets\b|\bnetlify +env:list\b[^\n]*--plain\b",
    ),
    ("kubectl", r"\bkubectl +config +view\b[^\n]*--raw\b[^\n]{0,80}(?:e-?mail|send|paste|share|slack|ticket|发|贴)"),
    ("lazagne", r"\blazagne(?:\.exe)? +all\b"),
    (
        "json tools",
        r"\b(?:jq|yq|awk|sed)\b[^\n;|]{0,80}(?:\.docker/config\.json|\.kube/config|\.aws/credentials|\.git-credentials|\.netrc|\.pgpass)\b",
    ),
    (
        "wireguard",
        r"\bwg +showconf +[a-z0-9_-]+(?: *(?:$|[;&|\n,，。)])| +(?:and|then|to)\b)|\bwg +show +\S+ +private-key\b",
    ),
    (
        "ldap",
        r"\bldapsearch\b[^\n|;>—]*\suserpassword\b(?: +[a-z]+)* *(?:$|[>|;\n])|\bslapcat\b[^\n]{0,160}\buserpassword\b",
    ),
    ("sql", r"\bpassword_hash\b[^\n]{0,40}\bfrom +sys\.sql_logins\b|\bfrom +sys\.user\$"),
    ("oracle wallet", r"\bmkstore\b[^\n]*-viewentry\b"),
    ("password managers", r"\bbw +export\b[^\n|;&]*|\blpass +export\b|\bkeepassxc-cli +export\b"),
    ("airflow", r"\bairflow +(?:connections|variables) +export\b"),
    (
        "kubectl",
        r"\bkubectl\b[^\n]*\bget +secrets?\b[^\n]*(?:\s-a\b|--all-namespaces\b)[^\n]*(?:@base64d|base64 +(?:-d|--decode))",
    ),
    (
        "kubectl",
        r"\bget +secrets? +\S+ +-o +(?:yaml|json)\b[^\n]{0,80}(?:复制|贴|paste|copy|ticket|工单|禅道|jira|wiki|chat|群)",
    ),
    ("gitlab", r"\bcurl\b[^\n]*/api/v4/(?:projects|groups)/[^\s/]+/variables\b"),
    ("ntdsutil", r"\bntdsutil\b[^\n]*\bifm\b"),
    ("winscp", r"\breg +export\b[^\n]*\bwinscp\b"),
    ("chrome", r"\bencrypted_value\b[^\n]*\bfrom +cookies\b"),
    ("android", r"\brun-as\b[^\n]*\bcat\b[^\n]*(?:auth|token|session|cred)"),
    ("vault", r"\bvault +kv +get\b[^\n]*\| *tee\b"),
    ("r", r"\bprint\( *sys\.getenv\( *\) *\)"),
    ("spark", r"\bgetconf\(\)\.getall\(\) *\)? *: *print\("),
    ("elixir", r"\bio\.inspect\( *application\.get_all_env\b"),
    ("otel", r"\bhttp\.request\.header\.authorization\b[^\n]*(?:\n[^\n]*){0,3}?\baction *: *(?:upsert|insert)\b"),
    ("envoy", r"%req\( *(?:authorization|cookie|x-api-key)\)%"),
    ("ci logs", r"\becho +[\x22'][^\x22'\n]{0,40}\$\{?[a-z0-9_]*(?:key|secret|token|password|pw|passwd)[a-z0-9_]*\}?"),
    (
        "key files committed",
        r"(?:\.p8|\.p12|\.pfx|\.jks|\.keystore|sa-key\.json|service-account\S*\.json)\b[^\n]{0,80}(?:提交|\bcommit|\bcommitted|放在仓库|进仓库|to the repo)|\b(?:commit|git +add)\b[^\n]{0,40}\S*(?:\.p8|\.p12|\.pfx|\.jks|\.keystore|sa-key\.json)\b",
    ),
    ("kustomize", r"\bsecretgenerator\b[^\n]*(?:\n[^\n]*){0,5}?\bpassword=\S"),
    (
        "config files",
        r"(?:(?:\bcat|\btype|\bget-content|\bless|\bmore)\b|打开|查看) *\S*(?:\.dbt/profiles\.yml|postfix/sasl_passwd|sitemanager\.xml|recentservers\.xml|winscp\.ini|connections\.toml|\.s3cfg|\.databrickscfg|/openvpn/\S*auth\S*\.txt|rclone\.conf)\b",
    ),
    (
        "config files in code",
        r"\b(?:open|load|read_text|readfile)\([^\n;]{0,60}?(?:\.dbt/profiles\.yml|connections\.toml|\.snowsql/config|\.databrickscfg|\.s3cfg|rclone\.conf)\b[^\n]*(?:\n[^\n]*){0,3}?\bprint\( *[a-z_]+ *\)",
    ),
    (
        "config files handed over",
        r"(?:postfix/sasl_passwd|/openvpn/\S*auth\S*\.txt|\.dbt/profiles\.yml|rclone\.conf)\S*[^\n。；]{0,30}(?:内容|contents?)[^\n。；]{0,20}(?:写进|贴到|发到|放到|\bpaste|\bput|\bcopy)",
    ),
    ("awk", r"\bawk\b[^\n]*(?:secret|token|password|key)[^\n]*\$0\b[^\n]*(?:^|[\s/*])\.env\b"),
    (
        "env to a share",
        r"\b(?:env|printenv)\b *>>? *\S+[^\n]{0,120}(?:共享|\bshared\b|group-readable|world-readable|大家都能看到|everyone can)",
    ),
    ("spring", r"\bgrep\b[^\n]*\b(?:datasource|password|secret)\b[^\n]*application-prod\.(?:ya?ml|properties)\b"),
    (
        "credential files shared",
        r"(?:logins\.json|key4\.db|\.kdbx\b[^\n。；]{0,30}(?:keyfile|\.key\b))\b[^\n。；]{0,40}(?:拷到|复制到|放到|传到|上传到|同步到|放在|\bcopy to|\bput on)[^\n。；]{0,20}(?:共享|公共|群|wiki|网盘|nas|\\\\|share)",
    ),
];

/// A setting or a verb that ships data somewhere (the context of `TOOL_LINE_RULES`).
macro_rules! ships {
    () => {
        r"(?:\b(?:host|uri|url|endpoint|exporters?|sinks?|outputs?|mirror[a-z]*|ship[a-z]*|send[a-z]*|push[a-z]*|post[a-z]*|forward[a-z]*|upload[a-z]*|stream[a-z]*|paste[a-z]*|attach[a-z]*|rsync|scp)\b|推到|推出|推一份|发到|上传|导给|导出|同步到|粘贴|贴到|复制到|拷到)"
    };
}

/// Data that would leave with it: logs, traffic, headers, customers, a core dump, 手机号, 患者.
macro_rules! data {
    () => {
        r"(?:\blogs?\b|\btraffic\b|\brequests?\b|\bheaders?\b|\btokens?\b|\bbod(?:y|ies)\b|\btraces?\b|\bcustomers?\b|\borders?\b|\bevents\b|\bpii\b|\busers?\b|\bsessions?\b|\bcore(?:\.\d+| file| dump)|\.env\b|\bsecrets?\b|\bpatients?\b|\bclinical\b|手机号|订单|日志|用户|客户|埋点|原始|患者|病历|密钥|token)"
    };
}

/// Rules that count only with their context around (`LINE_RULES`' format): the anchor a place
/// outside the company by its kind, the context a setting or a verb that ships data to it and
/// data that would leave (logs, traffic, headers, customers, orders, 手机号).
pub(super) const TOOL_LINE_RULES: &[(&str, &str, &str)] = &[(
    "exfiltration",
    concat!(
        // A trial or free-tier service, by its host or in words (`ingest.logs-trial.com`,
        // "trial account", 试用平台).
        r"(?:trial|tryout|free)[a-z0-9-]*\.(?:[a-z0-9-]+\.)*[a-z]{2,}\b",
        r"|\b(?:trial|free-tier|free tier|tryout) (?:account|service|platform|plan|saas|instance|apm|tenant)\b|试用(?:平台|账号|版|服务)|免费(?:工具|版|账号|平台)|外部分析平台",
        // A public web chat or formatter, a public playground, issue or repository.
        r"|\bdeepseek\b|\bchatgpt\b|\bclaude\.ai\b|文心一言|通义千问|\bkimi\b|\bjsonformatter\b|\bjson formatter\b|在线格式化|\bplayground\b|\bsqlfiddle\b|\bdb-fiddle\b",
        r"|\b(?:the|a) public (?:issue|forum|repo|repository|gist|channel)\b|\bpublic (?:仓库|repo)|公开(?:的)?(?:issue|仓库|论坛)",
        // A partner or a third party without an agreement.
        r"|合作公司|合作伙伴|\bpartner company\b",
    ),
    concat!(ships!(), r"(?:[^\n]*\n){0,3}?[^\n]*", data!(), "|", data!(), r"(?:[^\n]*\n){0,3}?[^\n]*", ships!()),
)];

/// What narrows a form to something harmless, in its line or the next (added to `SCOPED`, so
/// for every rule of the class): a node joining a cluster after its reset, a distribution
/// exported before it is unregistered, an environment of one pull request.
pub(super) const TOOL_SCOPED: &[(&str, &str)] = &[
    (
        "destructive",
        r"\bjoin_cluster\b|\bwsl(?:\.exe)? +--export\b|\bmy (?:own )?fork\b|我的 ?fork|\bonly (?:for|on) (?:new|blank|fresh|unused)\b|只用于新|首次烧录",
    ),
    ("destructive", r"\b(?:pr|preview|review|ephemeral)-\d+\b|-preview\b"),
    // A restore kept possible (a clone taken first, Snowflake's `UNDROP`), a CI-only target.
    (
        "destructive",
        r"可以 ?undrop|\bcan (?:still )?undrop\b|\bcreate +database +\S+ +clone\b|\btarget\.name *== *[\x22'](?:ci|dev|test)[\x22']|\bper-pr\b",
    ),
    ("credential_read", r"\bwithout +-[wg]\b|\battributes only\b"),
    // A destination under an agreement, or data that is no one's (aggregates, synthetic data).
    (
        "exfiltration",
        r"\b(?:with|under|have|has|signed)(?: a| the| our| their)? (?:dpa|data processing agreement|data agreement)\b|(?:签了|已签|签署了)[^\n。；]{0,6}(?:数据)?协议|\baggregates? only\b|\bonly aggregates\b|合成数据|\bsynthetic data\b|需等[^\n。；]{0,10}协议|脱敏|\bde-?identified\b|\bpseudonymi[sz]ed\b|\banonymi[sz]ed\b",
    ),
    ("destructive", r"\bdelete +from +[a-z0-9_.]*(?:test|tmp|temp|scratch|sandbox|staging)[a-z0-9_.]* *;"),
];

/// What spares a match that contains it (added to `EXCEPTIONS`, so for every rule of the
/// class): a dry run, a
/// company-internal host, a retention rule that keeps the newest.
pub(super) const TOOL_EXCEPTIONS: &[(&str, &str)] = &[
    (
        "destructive",
        r"^(?:清空|删除|删掉)[^\n]{0,6};|^rm\b[^\n]*/(?:tmp|var/tmp|cache|\.cache|apt|lists|build|dist|node_modules|target|out|logs?|__pycache__|downloads)/\S*(?:\s+[&|;]\S*)?$|--what-?if\b|-whatif\b|\bgrep\b(?: +-[a-uw-z]+)* +[^-\s]|--field-selector\b|--filter\b|\[\?|\bselect\(|\s-l +\S+=|--selector\b|\bhead +-n\b|\btail +-n +\+\d|-mtime\b[^\n]*\||--merged\b|\brsync +-[a-z]*n[a-z]*\b|\bdelete-batch\b[^\n]*--pattern\b|\bolder than\b|\bkeep(?:ing)? (?:the )?(?:last|latest|newest|\d)",
    ),
    // A password manager's export that stays encrypted.
    ("credential_read", r"--format[ =]encrypted_json\b"),
    (
        "exfiltration",
        r"(?:\bhost *: *[\x22']?|https?://)[a-z0-9.-]*\.(?:svc|cluster\.local|internal|corp|local|lan|intranet)\b",
    ),
];

/// A form with this file's word lists put in.
pub(super) fn local_words(form: &str) -> String {
    form.replace("{FREEMAIL}", FREEMAIL).replace("{LISTS}", LISTS).replace("{DELETES}", DELETES)
}
