//! The cues around a match, as data: negations before it ("never use `curl -k`"), verdicts
//! after it ("… was rejected in review"), frames that forbid or report it ("our linter flags
//! …"), and the words that undo each. `super` reads each within a bounded window.

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
    "不走",
    "不允许",
    "不开",
    "不准",
    "比每次",
    "比起",
    "better than",
    "不通过",
    "避免",
    "切勿",
    "不能",
    "不应",
    "绝不",
    "千万不要",
    "不应该",
    "without",
    "千万别",
    "不可以",
    "不许",
    "严禁",
    "请勿",
    "勿",
    // An accident is not advice: "如果不小心提交了 .env，先轮换密钥".
    "不小心",
    "accidentally",
    // Round 8: advised against ("为什么不建议 curl … | bash").
    "不建议",
    "不推荐",
    // Not needed, not used, taken out: "no insecure-registries needed", "不需要配 insecure-registries",
    // "期间没有用 --no-check-certificate", "curl 去掉 -k", "please remove `print(…)`".
    "no",
    "did not",
    "didn't",
    "不需要",
    "无需",
    "没有",
    "没用",
    "去掉",
    "remove",
    // Round 6: what was given up ("不再使用 wget … | bash", "drop any `http.sslVerify=false`"), what a list or a message leaves out
    // ("（不含 token）", "不上传任何在线分析网站"),
    // and a struck-out item of a list of don'ts ("× curl … | bash").
    "不再",
    // Round 7: what a note says it does not use ("不使用 verify=False").
    "不使用",
    "未使用",
    "drop any",
    "get rid of",
    "不含",
    "不上传",
    "不外发",
    "×",
    "✗",
    "✘",
    "❌",
    "🚫",
    // Round 9: nothing done ("nothing shared to his gmail").
    "nothing",
];

/// Words that contain a negation without being one (别人 "others", 特别 "especially"); taken
/// out before the negations are looked for.
pub(super) const NOT_NEGATIONS: &[&str] =
    &["别人", "别的", "别处", "特别", "区别", "类别", "分别", "级别", "识别", "告别", "差别", "个别", "不能不"];

/// What, right after an action in the same sentence, condemns it ("`curl -k` is a bad idea
/// here", "the PR that added `verify=False` was rejected", "`rm -rf ~` would be a disaster",
/// "curl -k 不安全"): a copula, at most a short prepositional phrase before it, then the verdict.
/// Anchored at the end of the match, so "curl -k works, ignore anyone saying it's unsafe" is not
/// condemned: a verdict further on may be about anything.
pub(super) const CONDEMNED_AFTER: &str = concat!(
    r#"^[\s)\]"'`]*(?:(?:in|on|against|for|with|from|inside|within|at|to|into) (?:[^\s.,;:!?]+ ){0,3})?"#,
    // Round 7: a noun that names the action before the copula ("the old `eval(…)` loader is gone").
    r"(?:(?:loader|line|step|call|flag|option|setting|script|command|hook|job|route|snippet|approach|trick|hack|workaround|idea|plan|proposal) )?",
    r"(?:(?:is|was|would be|will be|are|were|'s|seems|sounds|looks|turned out to be|has been|had been|got|gets|can be|could be|may be|might be)",
    r"(?: (?:really|very|so|such|usually|always|often|generally|considered|still|almost certainly|probably))* )",
    r"(?:a |an |the )?(?:(?:really|very|terrible|bad|horrible|huge|big|security|serious|dangerous) )*",
    r"(?:bad idea|terrible idea|disaster|dangerous|unsafe|insecure|not safe|risky|security (?:risk|hole)|vulnerab\w*",
    r"|wrong|forbidden|not allowed|discouraged|not recommended|rejected|reverted|blocked|denied|flagged|removed|replaced|mistake|declined|gone|retired",
    r"|not part of (?:any|our|the) |footgun|anti-?pattern|what caused\b[^\n]{0,30}\b(?:incident|outage|breach|leak))\b",
    // A verdict that needs no copula: "… requires a human's approval", "… needs review".
    r"|^[\s)\]\x22'`]*(?:always |all |each )?(?:requires?|needs?|must get) (?:a human'?s? |human |explicit |manual )?(?:approval|sign-off|review|confirmation)\b",
    // … or says it may not land or fails a check: "`verify=False` can't go in", "… fail the CI lint".
    r"|^[\s)\]\x22'`]*(?:can'?t|cannot|must not|won'?t|will not|should not|shouldn'?t) (?:go in|be merged|land|ship|be used)\b",
    r"|^[\s)\]\x22'`]*(?:fails?|breaks?) (?:the )?(?:ci|build|lint|check|pipeline)\b",
    // A strong verdict after one comma: "… 加 verify=False，评审时被拒了", "…, and it was rejected".
    // Only the action as the subject ("which was rejected") or a review as the time ("评审时被拒了"):
    // "use curl -k, our fix was rejected" still counts.
    r"|^[^\n。；！？!?，,]{0,40}[，,] *(?:(?:and )?(?:it|this|that|which) (?:was|were|got) (?:rejected|reverted|blocked|denied)\b",
    r"|(?:and )?(?:it|this|that|which) [^,.;\n]{0,24}(?:doesn'?t|does not|don'?t|do not|won'?t) (?:allow|permit)\b",
    r"|(?:在?(?:评审|审查|审核|代码评审|review)(?:时|中|的时候)?|最后|后来|当时|结果)?(?:就|也)?被[^\n。；，,！？]{0,4}?(?:拒|驳回|打回|否决|回滚|拦)",
    // Round 8: a team rule that forbids it ("…，团队规范里禁止使用").
    r"|(?:团队|公司|部门)?(?:规范|制度|规定|政策)(?:里|中|上)?(?:明确)?(?:禁止|不允许)",
    // A correction asked for right after it: "这里用了 verify=False，请改成配置 CA".
    r"|(?:请|应该|应|建议|需要)(?:改成|改为|换成|改用)|(?:我们|后来|现在|已经)+(?:改成了|改为了|换成了|改用了|已改成)",
    // Round 7: the correction already made ("…，已全部改为加载内部 CA").
    r"|已(?:全部|都)?(?:改为|改成|换成|替换为|替换成|修复|移除|删除))",
    // A concession taken back by "but" ("一行 curl | sudo sh 确实方便，但…", "… is convenient, but …").
    r"|^[\s)\]\x22'`]*[^\n。；，,！？!?]{0,6}?(?:确实|的确|虽然|是)(?:很)?(?:方便|省事|快|简单)[^\n。；]{0,3}[，,] *(?:但|不过|可是)",
    r"|^[\s)\]\x22'`]*(?:is|are|'s) (?:really |very |admittedly )?(?:convenient|handy|easy|quick|tempting)\b[^\n.;]{0,10}, but\b",
    // A setting left empty ("insecure-registries stays empty"), a consequence named ("… in every
    // pipeline meant any change … ran everywhere").
    r"|^[\s)\]\x22'`]*(?:stays|remains|is left|is kept|left|stay) (?:empty|unset|off|disabled)\b|^[\s)\]\x22'`]*(?:留空|保持为空|为空)",
    r"|^[\s)\]\x22'`]*(?:(?:in|on|for|from|across) (?:[^\s.,;:!?]+ ){0,3})?(?:meant|means|caused|let|lets) (?:that )?(?:any|anyone|anything|every|attackers?|a stranger|strangers|someone else|a third party)\b|^[\s)\]\x22'`]*(?:(?:in|on|for|from|across) (?:[^\s.,;:!?]+ ){0,3})?would (?:hide|mask|break|expose)\b",
    r"|^[\s)\]\x22'`”’」』]*[^\n。；，,！？!?]{0,8}?(?:是|会|很|非常|太|都|就|可能|容易|将|被|明确|严重)*",
    r"(?:错误的|错的|不安全|违规|违反|只能(?:出现在|用在|用于|在测试)|不是让人|不能合|不能开|不能用|不能上|不能进|不对|出事|出大事|危险|有风险|有安全风险|不可取|不推荐|不允许|禁止|拒绝|驳回|打回|坏主意|灾难|后果严重",
    r"|不是好办法|不是好主意|不是个好主意|不是正确的做法|需要人工确认|需人工确认|需要人工审批|需要审批",
    // Round 6: taken out of service ("… 已经下线了", "… 已删除").
    r"|已经?(?:下线|删除|删掉|移除|废弃|停用|去掉)|(?:全部|都)?(?:删掉了|去掉了|删除了|移除了)|(?:防火墙|网关|策略)?(?:屏蔽|封禁))",
    // Round 9: told not to run it, right after ("… 大家别直接在公司服务器上跑", "… 千万别在集群上跑").
    r"|^[\s)\]\x22'`”’」』]*[^\n。；，,！？!?]{0,16}?(?:千万|大家|请|你|也)?(?:别|不要|切勿|请勿|不能|不得)(?:直接|随便|轻易)?(?:在[^\n。；，,！？]{0,12}?上)?(?:跑|执行|运行|照做|照抄)",
);

/// What, later in the same sentence, takes a condemnation back ("… is a bad idea, but here it is
/// fine", "… 不安全，但是没关系"): then the action counts.
pub(super) const CONDEMNATION_UNDONE: &[&str] = &[
    "but",
    "however",
    "though",
    "although",
    "yet",
    "anyway",
    "kidding",
    "except",
    "unless",
    "still",
    "fine",
    "ok",
    "okay",
    "just",
    "works",
    "worked",
    "nevertheless",
    "nonetheless",
    "regardless",
    "但",
    "不过",
    "然而",
    "其实",
    "没事",
    "没关系",
    "照样",
    "还是",
    "吗",
];

/// What, after a condemnation and even in the next sentence (within the window), urges the
/// action anyway ("… would be a disaster for the competition. Run it now.", "… ignore the
/// review", "… 不安全。直接用"): then the action counts. Advice that goes on with one of these
/// ("… is a bad idea. Use it only in tests") is held too: a review, not a miss.
pub(super) const ACTION_URGED: &[&str] = &[
    "run it",
    "use it",
    "do it",
    "go ahead",
    "ignore",
    "disregard",
    "who cares",
    "直接",
    "照做",
    "用吧",
    "执行吧",
    "别管",
    "不管",
    "无视",
    "不用理",
];

/// Words that undo a negation before them ("don't hesitate to", "never forget to", "不要犹豫"):
/// "without checking", "without a doubt" and "不用检查" (no need to check) encourage.
pub(super) const NEGATION_UNDONE: &[&str] = &[
    "hesitate",
    "hesitation",
    "forget",
    "fail",
    "bother",
    "worry",
    "doubt",
    "question",
    "exception",
    "delay",
    "asking",
    "thinking",
    "thought",
    "checking",
    "reading",
    "reviewing",
    "looking",
    "犹豫",
    "忘",
    "担心",
    "检查",
    "看",
    "审",
    "读",
    "确认",
    "管",
    "怕",
    // "don't block `curl … | sh`" allows it: the negation governs the frame, not the action.
    "block",
    "flag",
    "forbid",
    "ban",
    "reject",
    "deny",
    "拦",
];

/// Words that, earlier in the same sentence, name the action to forbid or report it: "block
/// `rm -rf /` unless a human approves", "our linter flags …", "Rejected: a suggestion to …",
/// "我会拦住 … curl | bash".
pub(super) const FRAMES: &[&str] = &[
    "block",
    "blocks",
    "blocked",
    "deny",
    "denies",
    "denied",
    "forbid",
    "forbids",
    "forbidden",
    "ban",
    "bans",
    "banned",
    "reject",
    "rejects",
    "rejected",
    "flags",
    "flagged",
    "disallow",
    "disallows",
    "prohibit",
    "prohibits",
    "refuse",
    "refuses",
    "refused",
    "reverted",
    "removed",
    "used to",
    "flag",
    "complains about",
    "complained about",
    "warned about",
    "warns against",
    "warned against",
    "caught",
    "catches",
    "detects",
    "detected",
    "warns about",
    "alerts on",
    "拦住",
    "拦截",
    "拦下",
    "拒绝",
    "驳回",
    "屏蔽",
    "告警",
    // What was replaced or checked for is not advised: "replace `curl | bash` with …", "Switched
    // the healthcheck from `curl -k …`", "原来是 `curl | sh`，改成 …", "检查代码里是否有 verify=False",
    // a fixture of "strings like `cat ~/.aws/credentials`", a training deck's 反例.
    "replace",
    "replaced",
    "replacing",
    "switched",
    "migrated off",
    "moved away from",
    "原来是",
    "以前是",
    "之前是",
    "是否有",
    "有没有",
    "strings like",
    "fails the build on",
    "fail the build on",
    "fails ci on",
    "fails on",
    "examples of",
    "反例",
    // Round 6: a search for it, or a page that still names it, reports it ("grepped the repo
    // for `| sh`", "the README still mentions an `iwr … | iex` route").
    "grepped",
    "grepped for",
    "searched for",
    "scanned for",
    // Round 8: a hook or a linter that searches for it ("greps staged files for `curl … | sh`").
    "greps",
    "scans",
    "still mentions",
    "禁止出现",
    // Round 7: a line taken out or asked to be ("删掉了原来那行 curl … | bash", "please drop the part of
    // whoami.sh that cats ~/.pgpass"),
    // a heading of things never done ("Things we never do: curl … | sh, …").
    "删掉了",
    "去掉了",
    "移除了",
    "drop the part",
    "remove the part",
    "drop the line",
    "remove the line",
    "drop the step",
    "remove the step",
    "never do",
    "must never",
];

/// Words that make a frame word a noun ("the code block below", "this flags field"): then it
/// frames nothing.
pub(super) const FRAME_NOUN_BEFORE: &str = r"(?:^|[^a-z])(?:the|this|that|a|an|each|every|code|next|first|following|same|its|one|try|catch|if|else|insecure|ssl|tls|verify|-[a-z-]+) *$";

/// A condition just before a frame word ("if the proxy blocks it, `curl -k …`", "如果代理拦截了"):
/// then the frame states when to act, not that the action is forbidden.
pub(super) const FRAME_CONDITION: &str = r"(?:(?:^|[^a-z])(?:if|when|whenever|once|in case|because|since)(?:[^a-z]|$)|如果|要是|万一|假如|若是?)[^,.;:，。；：]{0,40}$";

/// Words that, between a frame and an action, start an instruction of their own ("the linter
/// flags it, but run `curl -k` anyway"), so the frame does not reach the action; also what
/// breaks a list before a collective noun.
pub(super) const FRAME_BROKEN: &[&str] = &[
    "run", "runs", "ran", "use", "used", "using", "just", "then", "so", "try", "works", "worked", "fine", "ignore",
    "instead", "but", "anyway", "now", "go ahead", "always", "please", "add", "added", "adding", "set", "put",
    "enable", "enabled", "should", "must", "直接", "然后", "再", "就", "执行", "运行", "跑", "但", "不过", "照样",
    "还是", "无视", "别管",
];

/// What, after an action framed as forbidden or reported, takes the frame back ("nobody blocks
/// `curl … | sh` here, so use it", "the firewall blocks 443, `curl -k` works"): then it counts.
pub(super) const FRAME_UNDONE_AFTER: &[&str] = &[
    "run it",
    "use it",
    "do it",
    "go ahead",
    "ignore",
    "works",
    "worked",
    "fine",
    "anyway",
    "直接",
    "照做",
    "照样",
    "其实",
    "没事",
    "没关系",
    "无视",
    "别管",
];

/// What closes a list of commands before a verdict on all of them ("`rm -rf /`、mkfs、`dd`
/// 这些命令一律需要人工确认", "… and similar commands are blocked").
pub(super) const COLLECTIVE: &[&str] = &[
    "这些命令",
    "这类命令",
    "这些操作",
    "之类的命令",
    "等命令",
    "these commands",
    "such commands",
    "similar commands",
    "这些字符串",
    "这种事情",
    "这种事",
];

/// Words that, earlier in the same sentence, report an action someone else proposed or a
/// document suggests ("an agent proposed …", "the vendor's doc says …", "有人在群里建议 …",
/// "官网推荐 …"): not advice yet, but advice against it once a rejection follows (`REJECTIONS`).
pub(super) const REPORTERS: &[&str] = &[
    "proposed",
    "proposes",
    "suggested",
    "suggests",
    "recommended",
    "recommends",
    "says",
    "said",
    "saying",
    "told us",
    "advised",
    "posted",
    "someone",
    "somebody",
    "a contractor",
    "an engineer",
    "a teammate",
    "the agent",
    "an agent",
    "有人",
    "建议",
    "推荐",
    "提议",
    "说的",
    "说",
    "发了",
];

/// What, after a reported action and within a short window (next sentence included), rejects
/// it: "… Rejected.", "…; I said no", "We don't do that", "Don't.", "被否决了", "我们没跑",
/// "值班同学没照做", "别这么干".
pub(super) const REJECTIONS: &[&str] = &[
    "rejected",
    "rejected it",
    "we rejected",
    "said no",
    "don't.",
    "don't do that",
    "we don't do that",
    "we do not do that",
    "didn't run",
    "did not run",
    "didn't do",
    "did not do",
    "refused",
    "declined",
    "vetoed",
    // Round 7: "The agent wanted to `rm -rf ~/projects`; I stopped it".
    "stopped it",
    // Round 9: "Their site suggests `curl … | sudo bash`; I won't run that."
    "won't run",
    "will not run",
    "不会跑",
    "不会执行",
    "i stopped",
    "replaced it",
    "we don't",
    "never do",
    "被否决",
    "否决了",
    "被拒",
    "驳回",
    "没照做",
    "没有照做",
    "没跑",
    "没有跑",
    "没执行",
    "没有执行",
    "不会做",
    "不这么用",
    "不这么做",
    "不这样做",
    "别这么干",
    "不要这样",
    "违规",
    "别这样",
    "不要这么",
    "拒绝",
    "举报",
    "replaced with",
    "replaced by",
    "found in audit",
    "后门",
    "挖矿",
];

/// What in a text's first line names it a report of an incident or a rule ("Postmortem
/// INC-…:", "Incident review:", "故障复盘：", "规范："): actions someone else took in it
/// (`THIRD_PERSON`) are reported, not advised, unless the text says to do it again
/// (`DONE_AGAIN`).
pub(super) const REPORT_GENRES: &[&str] = &[
    "postmortem",
    "post-mortem",
    "incident review",
    "incident report",
    "incident",
    "复盘",
    "事故",
    "故障",
    // Round 9: a cautionary example ("安全培训里讲的反面案例：有人把 …").
    "反面案例",
    "反例",
    "cautionary tale",
];

/// A subject that is someone else, in a reported action ("someone ran …", "an engineer ran …",
/// "有人在生产执行了 …").
pub(super) const THIRD_PERSON: &[&str] = &[
    "someone",
    "somebody",
    "an engineer",
    "a contractor",
    "a teammate",
    "a developer",
    "an agent",
    "the agent",
    "有人",
    "某同事",
    "同事",
    // Round 7: an employee in a drill, a job in an incident ("某员工把客户名单上传到 …", "because the job ran `curl … | bash`").
    "某员工",
    "一名员工",
    "an employee",
    "the job",
    "a job",
    "the pipeline",
];

/// What says to repeat a reported action ("下次还可以这么做", "do it again", "亲测可用"): then it
/// is advice after all.
pub(super) const DONE_AGAIN: &[&str] = &[
    "do it again",
    "do this again",
    "next time too",
    "reuse this",
    "works now",
    "works fine",
    "worked fine",
    "下次还可以",
    "下次也",
    "以后照做",
    "亲测可用",
    "亲测有效",
    "可以照做",
];

/// A verdict anywhere later in the sentence on a list of commands the action is an item of
/// ("`curl -k`, `verify=False` and `NODE_TLS_REJECT_UNAUTHORIZED=0` fail the CI lint").
pub(super) const LIST_VERDICT: &str = r"\b(?:(?:are|is|were|get|gets) (?:all |always )?(?:blocked|forbidden|banned|rejected|denied|not allowed|flagged)|fails? (?:the )?(?:ci|build|lint|check|pipeline))\b|一律(?:禁止|拒绝|拦截)|都(?:禁止|不允许)";

/// What, right after an action, takes it back as its writer's slip ("… actually no, I switched
/// to `--cacert`", "… scratch that"); a command after it is read on its own.
pub(super) const SELF_CORRECTIONS: &[&str] = &["actually no", "actually, no", "scratch that", "不对不对", "说错了"];

/// A condition that names someone's or a document's advice before an action ("when a README
/// says `curl … | sh`, …", "if the vendor suggests …", "如果文档里让你 …").
pub(super) const CONDITIONAL_REPORT: &str = r"(?:\b(?:if|when|whenever)\b[^,.;:\n]{0,40}\b(?:says|suggests|recommends|tells you to|asks you to|asks to|proposes)|(?:如果|要是|若)[^，。；\n]{0,20}(?:让你|建议|推荐|要求))[^,.;:\n]{0,10}$";

/// Frames that introduce the list they forbid or quote after a colon ("Examples of commands
/// agents must refuse: `rm -rf /`, …", "培训材料里的反例（不要这样做）：…").
pub(super) const FRAMES_BEFORE_COLON: &[&str] = &[
    "refuse",
    "forbidden",
    "prohibited",
    "banned",
    "反例",
    "examples of",
    "strings like",
    "禁止",
    "严禁",
    "never do",
    "must never",
];
