//! Deterministic synthetic experiences and queries, Chinese, English and mixed, in the shape of
//! real agent experiences: tools with flags, config files, error codes, 配置/部署/测试/数据库/缓存….
//!
//! Words are drawn from pools with a Zipf distribution (the first words of a pool are common,
//! the tail is rare), as in real text, and queries draw from the same pools with the same
//! distribution, so they hit the experiences. Every experience is distinct.

use serde::Serialize;

/// A small, fast, seedable PRNG (SplitMix64). Good enough to pick words; the same seed always
/// gives the same data, so runs are comparable.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next_u64() % items.len() as u64) as usize]
    }

    /// True with probability `numerator / denominator`.
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.next_u64() % denominator < numerator
    }
}

/// The language mix of an experience or a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Chinese,
    English,
    Mixed,
}

impl Language {
    pub const ALL: [Language; 3] = [Language::Chinese, Language::English, Language::Mixed];

    /// Item `index` of a stream: the three languages in turn, so every third item is Chinese.
    fn of_index(index: usize) -> Language {
        Language::ALL[index % 3]
    }

    pub fn label(self) -> &'static str {
        match self {
            Language::Chinese => "zh",
            Language::English => "en",
            Language::Mixed => "mixed",
        }
    }
}

/// One experience as `kb.import` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GeneratedExperience {
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: i64,
}

impl GeneratedExperience {
    pub fn n_chars(&self) -> usize {
        self.task.chars().count() + self.resource.chars().count() + self.result.chars().count()
    }
}

/// One search query and its language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedQuery {
    pub text: String,
    pub language: Language,
}

// ---------------------------------------------------------------------------------------------
// Vocabulary. Order matters: earlier words are drawn more often (Zipf).

#[rustfmt::skip]
const PROJECTS: &[&str] = &[
    "billing-api", "user-service", "web-admin", "data-pipeline", "search-gateway", "mobile-app", "auth-server",
    "report-worker", "infra", "docs-site", "order_service", "notifyBot", "payment-gateway", "inventory-sync",
    "chat-backend", "ml-training", "etl-jobs", "cms-frontend", "api-gateway", "log-shipper", "metrics-exporter",
    "feature-flags", "email-sender", "image-resizer", "pdf-renderer", "crm-sync", "warehouse-api",
    "recommendation-svc", "fraud-detector", "edge-proxy", "ci-runner", "admin-console", "analytics-dashboard",
    "sso-bridge", "webhook-relay", "geo-service", "pricing-engine", "subscription-api", "audit-log",
];

#[rustfmt::skip]
const TOOLS: &[&str] = &[
    "vitest", "npm", "docker", "git", "pytest", "kubectl", "cargo", "jest", "pnpm", "helm", "terraform", "yarn",
    "make", "tsc", "eslint", "webpack", "vite", "nginx", "redis-cli", "psql", "curl", "ssh", "go", "pip", "poetry",
    "systemctl", "journalctl", "prettier", "gradle", "mvn", "mysql", "mongosh", "jq", "rsync", "crontab", "openssl",
    "certbot", "aws", "gcloud", "gh", "node", "deno", "bun", "uv", "conda", "ansible", "rollup", "esbuild", "babel",
    "tmux", "strace", "perf", "gdb", "ffmpeg", "sqlite3", "alembic", "flyway", "prisma", "django-admin", "rails",
    "bundle", "composer", "dotnet", "xcodebuild", "adb", "fastlane", "sentry-cli", "promtool", "vault", "consul",
    "etcdctl", "mc", "kafka-topics", "kafka-console-consumer", "pg_dump", "pg_restore", "rustup", "clippy-driver",
    "valgrind", "lldb",
];

#[rustfmt::skip]
const FLAGS: &[&str] = &[
    "--run", "--no-cache", "--watch", "--prefer-offline", "--frozen-lockfile", "--release", "-x", "--lf", "--force",
    "--dry-run", "--verbose", "-j4", "--race", "--coverage", "--inspect", "--max-old-space-size=4096",
    "--legacy-peer-deps", "--rm", "-it", "--network=host", "--restart=always", "--timeout=30s", "--retry=3",
    "--depth=1", "--rebase", "--amend", "--no-verify", "-p 8080:80", "--env-file=.env", "--build", "--pull=always",
    "--all-namespaces", "--selector=app=api", "--wait", "--atomic", "-auto-approve", "-out=plan.tfplan", "--check",
    "--fix", "--write", "--silent", "--bail", "--maxWorkers=2", "--runInBand", "--detectOpenHandles", "--profile",
    "--target=x86_64-unknown-linux-musl", "--locked", "--offline", "--features=full", "--no-default-features",
    "--noEmit", "--strict", "--incremental", "--sourcemap", "--minify", "--reload", "--workers=4",
    "--log-level=debug", "--since=1h", "--follow", "--tail=100",
];

#[rustfmt::skip]
const FILES: &[&str] = &[
    "tsconfig.json", "package.json", "Dockerfile", "docker-compose.yml", ".env", "Cargo.toml", "pyproject.toml",
    "nginx.conf", ".github/workflows/ci.yml", "values.yaml", "requirements.txt", "package-lock.json",
    "pnpm-lock.yaml", "yarn.lock", "Cargo.lock", "go.mod", "go.sum", ".env.local", ".dockerignore", "Chart.yaml",
    "kustomization.yaml", "deployment.yaml", "ingress.yaml", ".gitlab-ci.yml", "Jenkinsfile", "Makefile",
    "webpack.config.js", "vite.config.ts", "vitest.config.ts", "jest.config.js", "babel.config.js",
    "eslint.config.js", ".eslintrc.json", ".prettierrc", "tsconfig.build.json", "settings.py", "alembic.ini",
    "schema.prisma", "application.yml", "pom.xml", "build.gradle", "main.tf", "variables.tf", "terraform.tfstate",
    "ansible.cfg", "inventory.ini", "systemd/app.service", "redis.conf", "postgresql.conf", "pg_hba.conf", "my.cnf",
    ".npmrc", ".nvmrc", ".editorconfig", ".gitignore", ".gitattributes", "openapi.yaml", "swagger.json",
    "logback.xml", "log4j2.xml", "supervisord.conf", "Procfile", "vercel.json", "netlify.toml", "firebase.json",
    "poetry.lock", "setup.cfg", "tox.ini", "conftest.py", "manage.py",
];

#[rustfmt::skip]
const ERRORS: &[&str] = &[
    "ECONNREFUSED", "ETIMEDOUT", "OOMKilled", "ENOSPC", "EACCES", "EADDRINUSE", "ECONNRESET", "ENOENT", "EMFILE",
    "CrashLoopBackOff", "ImagePullBackOff", "502 Bad Gateway", "504 Gateway Timeout", "429 Too Many Requests",
    "401 Unauthorized", "403 Forbidden", "ModuleNotFoundError", "ImportError", "TypeError", "SyntaxError", "SIGSEGV",
    "SIGKILL", "exit code 137", "TS2307", "TS2322", "E0277", "E0502", "ERR_REQUIRE_ESM", "ERR_MODULE_NOT_FOUND",
    "ERR_SSL_PROTOCOL_ERROR", "ERESOLVE", "EPERM", "ENOTFOUND", "EPIPE", "deadlock_detected", "too_many_connections",
    "lock_wait_timeout", "duplicate_key", "serialization_failure", "disk_quota_exceeded", "heap_out_of_memory",
    "stack_overflow", "NullPointerException", "OutOfMemoryError", "ClassNotFoundException", "UnicodeDecodeError",
    "KeyError", "AttributeError", "RecursionError", "ConnectionResetError",
];

#[rustfmt::skip]
const PACKAGES: &[&str] = &[
    "react@18", "typescript@5.4", "node@20", "python3.12", "postgres:16", "redis:7", "nginx:1.25", "openssl@3",
    "webpack@5", "vite@5", "eslint@9", "jest@29", "vitest@1", "next@14", "express@4", "fastapi==0.110", "django==5.0",
    "flask==3.0", "sqlalchemy==2.0", "pydantic==2.6", "numpy==1.26", "pandas==2.2", "torch==2.2", "tokio@1",
    "serde@1", "axum@0.7", "golang:1.22", "alpine:3.19", "ubuntu:24.04", "kafka:3.7", "mysql:8.0", "mongo:7",
    "elasticsearch:8", "grafana:10", "prometheus:2.50", "kubernetes@1.29", "helm@3.14", "terraform@1.7",
];

#[rustfmt::skip]
const EN_ACTIONS: &[&str] = &[
    "Fix", "Configure", "Debug", "Speed up", "Deploy", "Set up", "Upgrade", "Migrate", "Profile", "Clean up",
    "Secure", "Automate", "Monitor", "Tune", "Roll back", "Reproduce", "Isolate", "Cache", "Parallelize",
    "Containerize", "Benchmark", "Harden", "Refactor", "Split", "Document",
];

#[rustfmt::skip]
const EN_NOUNS: &[&str] = &[
    "watch mode", "build cache", "path aliases", "connection pool", "integration tests", "memory leak",
    "database migrations", "reverse proxy", "cache eviction", "CI workflow", "hot reload", "source maps",
    "tree shaking", "code splitting", "lazy loading", "service worker", "health check", "readiness probe",
    "liveness probe", "resource limits", "node affinity", "horizontal autoscaling", "rolling update",
    "blue-green deploy", "canary release", "feature flag", "rate limiter", "circuit breaker", "retry policy",
    "idempotency key", "dead letter queue", "consumer lag", "partition rebalance", "schema registry", "read replica",
    "failover", "point-in-time recovery", "vacuum", "index bloat", "query planner", "prepared statements",
    "transaction isolation", "optimistic locking", "websocket reconnect", "long polling", "server-sent events",
    "gzip compression", "TLS handshake", "certificate renewal", "DNS resolution", "proxy settings", "SSH tunnel",
    "port forwarding", "file watcher", "inotify limit", "environment variables", "secrets rotation", "config drift",
    "lockfile", "monorepo workspace", "dependency hoisting", "peer dependencies", "type checking", "strict mode",
    "snapshot tests", "test fixtures", "mocks", "coverage report", "flame graph", "memory profile", "thread pool",
    "async runtime", "event loop", "garbage collection", "heap size", "file descriptors", "time zone", "locale",
    "unicode normalization", "CSV export", "PDF rendering", "image thumbnails", "video transcoding",
    "push notifications", "email delivery", "webhook retries", "OAuth callback", "session cookies", "CSRF token",
    "SSO login", "audit log", "log rotation", "cron jobs", "token refresh", "CORS preflight", "S3 uploads",
    "release builds", "virtualenv", "flat config",
];

#[rustfmt::skip]
const EN_PARAMETERS: &[&str] = &[
    "timeout", "pool size", "retry count", "batch size", "buffer size", "worker count", "heap limit",
    "keep-alive interval", "TTL", "max connections", "queue depth", "page size",
];

#[rustfmt::skip]
const EN_CONTEXTS: &[&str] = &[
    "on CI", "in production", "on a fresh laptop", "behind the corporate proxy", "in the staging cluster",
    "in the monorepo", "on Windows", "on ARM runners", "in Docker", "on macOS", "during the nightly job",
    "after the upgrade",
];

#[rustfmt::skip]
const EN_OUTCOMES: &[&str] = &[
    "Fixed.", "Build is green again.", "All tests pass.", "Deployed without downtime.", "Noticeably faster.",
    "Worked around for now; keep an eye on it.", "Rolled back and recovered.", "Documented in the runbook.",
];

#[rustfmt::skip]
const ZH_ACTIONS: &[&str] = &[
    "配置", "部署", "测试", "调试", "优化", "排查", "修复", "升级", "迁移", "监控", "重构", "打包", "回滚", "备份", "压测", "清理", "扩容", "缩容", "加固",
    "拆分", "合并", "复现", "定位", "隔离", "自动化",
];

#[rustfmt::skip]
const ZH_NOUNS: &[&str] = &[
    "数据库", "缓存", "连接池", "单元测试", "日志", "容器", "镜像", "索引", "消息队列", "定时任务", "接口", "权限", "证书", "依赖", "环境变量", "构建", "流水线",
    "网关", "负载均衡", "配置中心", "事务", "主从复制", "分库分表", "消费者", "生产者", "重试", "幂等", "限流", "熔断", "降级", "灰度发布", "分支", "合并冲突",
    "钩子", "制品库", "域名", "解析", "代理", "路由", "中间件", "会话", "令牌", "鉴权", "加密", "签名", "指标", "告警", "链路追踪", "采样", "内存", "线程池",
    "协程", "死锁", "竞态", "心跳", "序列化", "编码", "时区", "调度", "批处理", "缓存穿透", "缓存雪崩", "预热", "淘汰策略", "分片", "副本", "选主", "快照",
    "脚本", "模板", "版本", "锁文件", "压缩", "编译", "热更新", "集成测试", "覆盖率", "断言", "模拟对象", "基准测试", "性能", "延迟", "吞吐量", "并发", "编排",
    "节点", "集群", "存储卷", "挂载", "用户组", "防火墙", "端口", "健康检查", "探针", "慢查询", "文件上传", "跨域请求", "前端构建", "打包体积", "源码映射", "国际化",
    "字符集", "全文检索", "向量检索", "分词", "推送", "短信", "邮件", "支付回调", "对账", "报表", "导出",
];

#[rustfmt::skip]
const ZH_SYMPTOMS: &[&str] = &[
    "连接超时", "内存占用过高", "构建失败", "测试不稳定", "权限错误", "端口冲突", "磁盘写满", "响应变慢", "依赖冲突", "证书过期", "数据不一致", "死锁", "中文乱码", "时区错乱",
    "重复消费", "消息丢失", "主从延迟", "内存泄漏", "句柄泄漏", "启动失败", "频繁重启", "请求被限流", "登录态丢失", "上传中断", "任务没有执行", "日志丢失", "查询变慢",
    "打包体积过大",
];

const ZH_CONTEXTS: &[&str] =
    &["生产环境", "测试环境", "本地开发环境", "持续集成流水线", "预发布环境", "多租户集群", "内网机器", "新同事的电脑"];

#[rustfmt::skip]
const ZH_OUTCOMES: &[&str] = &[
    "问题已解决", "构建恢复正常", "测试全部通过", "部署完成", "性能明显提升", "暂时规避，仍需观察", "回滚后恢复", "已写进运维手册",
];

const ZH_PARAMETERS: &[&str] =
    &["超时时间", "连接数上限", "重试次数", "批量大小", "缓冲区", "线程数", "过期时间", "队列长度"];

// Templates: `{pool}` is replaced by a word drawn from that pool, `{n}` and `{m}` by numbers.

#[rustfmt::skip]
const EN_TASKS: &[&str] = &[
    "{en_action} {en_noun} for {project} {en_context}", "{en_action} {en_noun} after {error} {en_context}",
    "Get {en_noun} working with {tool} {en_context}", "{en_action} the {en_noun} of {project} ({error})",
];
#[rustfmt::skip]
const EN_FINDINGS: &[&str] = &[
    "the default {en_parameter} of {n} was too small for {en_noun}; {m} fixed it",
    "{tool} needs {flag} here, otherwise {en_noun} fails with {error}",
    "{error} came from {en_noun} in {file}; correcting the setting solved it",
    "{en_noun} was off by default; enabling it cut the job from {m} s to {n} s",
    "pinning {package} fixed the {en_noun} issue",
    "run {tool} {flag} before touching {file}, or {en_noun} keeps stale state",
    "{file} overrides {en_noun} silently, so the change in {project} never applied",
];
#[rustfmt::skip]
const ZH_TASKS: &[&str] = &[
    "在{zh_context}{zh_action}{zh_noun}时遇到{zh_symptom}", "{zh_action} {project} 服务的{zh_noun}和{zh_noun}",
    "给 {project} {zh_action}{zh_noun}，避免{zh_symptom}", "{zh_noun}{zh_symptom}，需要{zh_action}{zh_noun}",
];
#[rustfmt::skip]
const ZH_FINDINGS: &[&str] = &[
    "{zh_noun}的{zh_parameter}默认只有 {n}，改成 {m} 后不再{zh_symptom}", "根因是{zh_noun}没有开启，打开后{zh_noun}恢复正常",
    "{zh_noun}配置写错了，{zh_action}之后{zh_outcome}", "需要先清理{zh_noun}再{zh_action}{zh_noun}，否则还会{zh_symptom}",
    "把{zh_noun}的{zh_parameter}从 {n} 调到 {m} 以后{zh_noun}稳定了", "{zh_noun}和{zh_noun}互相影响，拆开部署后{zh_outcome}",
];
#[rustfmt::skip]
const MIXED_TASKS: &[&str] = &[
    "在{zh_context}用 {tool} {zh_action}{zh_noun}", "{tool} 的{zh_noun}问题：{error} {en_context}",
    "{project} 升级 {package} 后{zh_noun}{zh_symptom}", "用 {tool} {flag} {zh_action} {en_noun}",
];
#[rustfmt::skip]
const MIXED_FINDINGS: &[&str] = &[
    "{tool} 加上 {flag} 后{zh_noun}不再{zh_symptom}", "{file} 里的 {en_noun} 要配合 {flag} 才生效",
    "报 {error} 是因为{zh_noun}配置不对，改完{zh_outcome}", "{package} 的 {en_noun} 默认关闭，打开后{zh_noun}正常",
    "{zh_noun}的 {en_parameter} 调到 {m} 之后 {error} 消失",
];

/// Words queries are made of, per language, as a user would type them.
#[derive(Clone, Copy)]
enum QueryPool {
    ChineseNoun,
    ChineseAction,
    ChineseSymptom,
    EnglishNoun,
    Tool,
    Flag,
    File,
    Error,
}

/// The pools with their Zipf weights, built once per generation.
struct Vocabulary {
    pools: Vec<(&'static str, ZipfPool)>,
}

/// The Zipf–Mandelbrot offset: word `rank` (from 1) is drawn with probability proportional to
/// `1 / (rank + ZIPF_OFFSET)`. Pure Zipf (offset 0) over pools of a few dozen to a hundred
/// words would put the first word in most documents, far more than in real text, where the
/// vocabulary is thousands of words; the offset flattens the head to a realistic share.
const ZIPF_OFFSET: f64 = 5.0;

/// A pool of words drawn with Zipf–Mandelbrot probabilities: the first words are common, the
/// tail is rare.
struct ZipfPool {
    words: &'static [&'static str],
    cumulative: Vec<f64>,
}

impl ZipfPool {
    fn new(words: &'static [&'static str]) -> ZipfPool {
        let mut total = 0.0;
        let cumulative = (0..words.len())
            .map(|rank| {
                total += 1.0 / ((rank + 1) as f64 + ZIPF_OFFSET);
                total
            })
            .collect();
        ZipfPool { words, cumulative }
    }

    fn draw(&self, rng: &mut Rng) -> &'static str {
        let total = *self.cumulative.last().expect("pools are not empty");
        let target = rng.unit() * total;
        let position = self.cumulative.partition_point(|&bound| bound <= target);
        self.words[position.min(self.words.len() - 1)]
    }
}

impl Vocabulary {
    fn new() -> Vocabulary {
        let pools = [
            ("project", PROJECTS),
            ("tool", TOOLS),
            ("flag", FLAGS),
            ("file", FILES),
            ("error", ERRORS),
            ("package", PACKAGES),
            ("en_action", EN_ACTIONS),
            ("en_noun", EN_NOUNS),
            ("en_parameter", EN_PARAMETERS),
            ("en_context", EN_CONTEXTS),
            ("en_outcome", EN_OUTCOMES),
            ("zh_action", ZH_ACTIONS),
            ("zh_noun", ZH_NOUNS),
            ("zh_symptom", ZH_SYMPTOMS),
            ("zh_context", ZH_CONTEXTS),
            ("zh_outcome", ZH_OUTCOMES),
            ("zh_parameter", ZH_PARAMETERS),
        ];
        Vocabulary { pools: pools.into_iter().map(|(name, words)| (name, ZipfPool::new(words))).collect() }
    }

    fn draw(&self, pool_name: &str, rng: &mut Rng) -> &'static str {
        let (_, pool) = self
            .pools
            .iter()
            .find(|(name, _)| *name == pool_name)
            .unwrap_or_else(|| panic!("no word pool named {pool_name:?}"));
        pool.draw(rng)
    }

    fn draw_query_word(&self, pool: QueryPool, rng: &mut Rng) -> &'static str {
        let name = match pool {
            QueryPool::ChineseNoun => "zh_noun",
            QueryPool::ChineseAction => "zh_action",
            QueryPool::ChineseSymptom => "zh_symptom",
            QueryPool::EnglishNoun => "en_noun",
            QueryPool::Tool => "tool",
            QueryPool::Flag => "flag",
            QueryPool::File => "file",
            QueryPool::Error => "error",
        };
        self.draw(name, rng)
    }

    /// Replaces every `{pool}` in `template` with a word drawn from that pool, and `{n}`, `{m}`
    /// with small numbers.
    fn fill(&self, template: &str, rng: &mut Rng) -> String {
        let mut out = String::with_capacity(template.len() * 2);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').expect("templates close their braces");
            match &rest[open + 1..close] {
                "n" => out.push_str(&rng.range(2, 60).to_string()),
                "m" => out.push_str(&rng.range(61, 900).to_string()),
                pool_name => out.push_str(self.draw(pool_name, rng)),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Experiences

/// `n_items` distinct experiences, a third each Chinese, English and mixed, 150–300 characters
/// each (task + resource + result). The same `seed` gives the same list.
pub fn experiences(n_items: usize, seed: u64) -> Vec<GeneratedExperience> {
    let vocabulary = Vocabulary::new();
    let mut rng = Rng::new(seed);
    (0..n_items).map(|index| experience(&vocabulary, index, Language::of_index(index), &mut rng)).collect()
}

fn experience(vocabulary: &Vocabulary, index: usize, language: Language, rng: &mut Rng) -> GeneratedExperience {
    let resource = match rng.range(0, 2) {
        0 => vocabulary.fill("{tool} {flag}", rng),
        1 => vocabulary.fill("{file}", rng),
        _ => vocabulary.fill("{tool} {flag} + {file}", rng),
    };
    // A ticket number unique to the item makes every experience distinct, as real ones are.
    let ticket = 10_000 + index;
    let (tasks, findings, separator) = match language {
        Language::Chinese => (ZH_TASKS, ZH_FINDINGS, "；另外"),
        Language::English => (EN_TASKS, EN_FINDINGS, "; also "),
        Language::Mixed => (MIXED_TASKS, MIXED_FINDINGS, "；另外"),
    };
    let task = vocabulary.fill(rng.pick(tasks), rng);
    let mut result = vocabulary.fill(rng.pick(findings), rng);
    let closing = match language {
        Language::English => vocabulary.fill(&format!(". {{en_outcome}} (ticket OPS-{ticket})"), rng),
        Language::Chinese => vocabulary.fill(&format!("。{{zh_outcome}}（工单 #{ticket}）"), rng),
        Language::Mixed => vocabulary.fill(&format!("。{{zh_outcome}}（issue #{ticket}）"), rng),
    };
    let fixed_chars = task.chars().count() + resource.chars().count() + closing.chars().count();
    // Short items get more findings, so that every experience is 150–300 characters.
    while fixed_chars + result.chars().count() < 150 {
        result.push_str(separator);
        result.push_str(&vocabulary.fill(rng.pick(findings), rng));
    }
    result.push_str(&closing);
    // Ratings lean to 3–4, like real ones.
    let score = [1, 2, 3, 3, 3, 4, 4, 4, 5, 5][rng.range(0, 9) as usize];
    GeneratedExperience { task, resource, result, score }
}

// ---------------------------------------------------------------------------------------------
// Queries

/// `n_queries` queries of 2–5 words drawn like the experiences' words, a third each Chinese,
/// English and mixed. Chinese ones are typed half with spaces between words and half without,
/// as people do.
pub fn queries(n_queries: usize, seed: u64) -> Vec<GeneratedQuery> {
    use QueryPool::*;
    let vocabulary = Vocabulary::new();
    let mut rng = Rng::new(seed);
    (0..n_queries)
        .map(|index| {
            let language = Language::of_index(index);
            let n_words = rng.range(2, 5) as usize;
            let pools: &[QueryPool] = match language {
                Language::Chinese => &[ChineseNoun, ChineseNoun, ChineseAction, ChineseSymptom],
                Language::English => &[EnglishNoun, EnglishNoun, Tool, Flag, File, Error],
                Language::Mixed => &[ChineseNoun, ChineseAction, Tool, File, Flag, Error],
            };
            let words: Vec<&str> = (0..n_words)
                .map(|_| {
                    let pool = pools[(rng.next_u64() % pools.len() as u64) as usize];
                    vocabulary.draw_query_word(pool, &mut rng)
                })
                .collect();
            let text = if language == Language::Chinese && rng.chance(1, 2) { words.concat() } else { words.join(" ") };
            GeneratedQuery { text, language }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn experiences_are_distinct_deterministic_and_sized() {
        let items = experiences(3_000, 7);
        assert_eq!(items, experiences(3_000, 7));
        let distinct: HashSet<(&str, &str, &str)> =
            items.iter().map(|item| (item.task.as_str(), item.resource.as_str(), item.result.as_str())).collect();
        assert_eq!(distinct.len(), items.len());
        for item in &items {
            let n_chars = item.n_chars();
            assert!((150..=300).contains(&n_chars), "{n_chars} characters: {item:?}");
            assert!((1..=5).contains(&item.score));
            assert!(!item.task.contains('{') && !item.result.contains('{'), "{item:?}");
        }
    }

    #[test]
    fn queries_mix_languages() {
        let queries = queries(300, 11);
        assert_eq!(queries, super::queries(300, 11));
        for language in Language::ALL {
            assert_eq!(queries.iter().filter(|query| query.language == language).count(), 100);
        }
        assert!(queries.iter().all(|query| !query.text.trim().is_empty()));
    }

    #[test]
    fn zipf_prefers_the_first_words() {
        let pool = ZipfPool::new(TOOLS);
        let mut rng = Rng::new(1);
        let draws: Vec<&str> = (0..10_000).map(|_| pool.draw(&mut rng)).collect();
        let first = draws.iter().filter(|&&word| word == TOOLS[0]).count();
        let tenth = draws.iter().filter(|&&word| word == TOOLS[9]).count();
        assert!(first > 2 * tenth, "first {first}, tenth {tenth}");
        assert!(draws.iter().collect::<HashSet<_>>().len() > TOOLS.len() / 2);
    }
}
