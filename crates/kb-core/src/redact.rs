//! Strict-mode redaction of secrets and personal data before anything is stored or sent to an LLM.
//!
//! The rules form one ordered table. Each rule is a regular expression plus a small function that
//! looks at a match in context and picks the byte range to replace (or declines the match), and a
//! placeholder such as `[API_KEY]`. Order matters: private key blocks go first because their body
//! would otherwise be chewed up by the token rules, URL credentials before emails (`user:pass@host`
//! looks like an email), JWTs and vendor token formats before the generic `token=…` rule, so each
//! secret is counted once under its most specific kind.
//!
//! Cost: clean text is scanned once by a `RegexSet` of all rules; only the rules that may match
//! are then run, one after the other, on the text as rewritten so far.
//!
//! Idempotency: no placeholder can be matched by any rule (placeholders start with `[`, which no
//! secret pattern accepts as a first character), so redacting redacted text changes nothing.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet, RegexSetBuilder};

/// How many matches of one kind of secret were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub kind: &'static str,
    pub count: usize,
}

/// Replaces secrets and personal data in `text` with placeholders such as `[API_KEY]`.
/// Returns the text unchanged (borrowed) when nothing matched.
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<Redaction>) {
    let compiled = &*COMPILED;
    let candidates = compiled.set.matches(text);
    if !candidates.matched_any() {
        return (Cow::Borrowed(text), Vec::new());
    }
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    let mut redactions: Vec<Redaction> = Vec::new();
    for rule_idx in candidates.iter() {
        let rule = &RULES[rule_idx];
        let Some((rewritten, n_replaced)) = apply_rule(rule, &compiled.regexes[rule_idx], &current) else {
            continue;
        };
        current = Cow::Owned(rewritten);
        match redactions.iter_mut().find(|existing| existing.kind == rule.kind) {
            Some(existing) => existing.count += n_replaced,
            None => redactions.push(Redaction { kind: rule.kind, count: n_replaced }),
        }
    }
    (current, redactions)
}

/// Runs one rule over `text`; `None` when it replaced nothing, so the caller can stay borrowed.
fn apply_rule(rule: &Rule, regex: &Regex, text: &str) -> Option<(String, usize)> {
    let mut rewritten = String::new();
    let mut copied_up_to = 0;
    let mut n_replaced = 0;
    for caps in regex.captures_iter(text) {
        let Some(span) = (rule.span)(text, &caps) else { continue };
        // A span may reach past the regex match (a PEM block runs on to its END line), so a later
        // match inside text already replaced is skipped.
        if span.start < copied_up_to {
            continue;
        }
        rewritten.push_str(&text[copied_up_to..span.start]);
        rewritten.push_str(rule.placeholder);
        copied_up_to = span.end;
        n_replaced += 1;
    }
    if n_replaced == 0 {
        return None;
    }
    rewritten.push_str(&text[copied_up_to..]);
    Some((rewritten, n_replaced))
}

struct Rule {
    /// Reported to the client in `redactions`, e.g. `github_token`.
    kind: &'static str,
    placeholder: &'static str,
    pattern: &'static str,
    /// Given the whole text and one match, the byte range to replace, or `None` to keep the match
    /// (a version string that looks like an IP, an environment variable reference, …).
    span: fn(&str, &Captures<'_>) -> Option<Range<usize>>,
}

struct Compiled {
    set: RegexSet,
    regexes: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns = RULES.iter().map(|rule| rule.pattern);
    Compiled {
        // The lazy DFA of a set this size needs a larger cache than the default, or it gives up
        // and falls back to a much slower engine on every text of more than a few kilobytes.
        set: RegexSetBuilder::new(patterns).dfa_size_limit(64 << 20).build().expect("redaction patterns compile"),
        regexes: RULES.iter().map(|rule| Regex::new(rule.pattern).expect("redaction pattern compiles")).collect(),
    }
});

/// A secret's value after its name: double-quoted, single-quoted or bare, in named groups so the
/// span functions can tell whether trailing punctuation belongs to it.
macro_rules! value {
    () => {
        r#"(?:"(?P<dq>[^"\r\n]{1,200})"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>[^\s"'`,;&，。；！？、（）【】「」]+))"#
    };
}

// `(?-u:\b)` is an ASCII word boundary. It is used throughout instead of `\b` for two reasons: a
// Chinese character next to a secret (`密钥sk-…`, `电话13812345678`) must count as a boundary, and
// the fast DFA engines cannot evaluate a Unicode `\b` on non-ASCII text.
const RULES: &[Rule] = &[
    // A whole PEM block, from the BEGIN line found here to its END line found by `pem_block`.
    Rule {
        kind: "private_key",
        placeholder: "[PRIVATE_KEY]",
        pattern: r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----",
        span: pem_block,
    },
    // `scheme://user:pass@host`: only the user info goes; scheme and host stay, they are useful.
    Rule {
        kind: "url_credentials",
        placeholder: "[CREDENTIALS]",
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{0,20}://([^\s/?#@:'"<>\[\]]*:[^\s/?#@'"<>\[\]]+)@"#,
        span: url_credentials,
    },
    Rule {
        kind: "jwt",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        span: whole_match,
    },
    Rule {
        kind: "bearer_token",
        placeholder: "[TOKEN]",
        pattern: r"(?i)(?-u:\b)bearer[ \t]+([A-Za-z0-9._~+/-]+=*)",
        span: bearer_token,
    },
    Rule {
        kind: "basic_auth",
        placeholder: "[CREDENTIALS]",
        pattern: r"(?i)(?-u:\b)authorization[ \t]*:[ \t]*basic[ \t]+([A-Za-z0-9+/]{6,}={0,2})",
        span: first_group_or_whole,
    },
    // OpenAI (`sk-…`, `sk-proj-…`, `sk-svcacct-…`), Anthropic (`sk-ant-…`) and the many
    // OpenAI-compatible providers that copied the `sk-` prefix.
    Rule {
        kind: "api_key",
        placeholder: "[API_KEY]",
        pattern: r"(?-u:\b)sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        span: sk_api_key,
    },
    Rule {
        kind: "stripe_key",
        placeholder: "[API_KEY]",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",
        span: whole_match,
    },
    Rule {
        kind: "aws_access_key_id",
        placeholder: "[API_KEY]",
        pattern: r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
        span: whole_match,
    },
    // The secret half of an AWS key pair has no recognisable shape of its own (40 base64
    // characters), so it is only found next to its name: env files, `~/.aws/credentials`, and the
    // JSON that `aws sts assume-role` prints (`"SecretAccessKey": "…"`, `"SessionToken": "…"`).
    Rule {
        kind: "aws_secret_key",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)(?-u:\b)(?:aws_?)?(?:secret_?access_?key|session_?token)["']?"#,
            r#"[ \t]*(?:=>|:=|[:=])[ \t]*["']?([A-Za-z0-9/+=]{16,})"#,
        ),
        span: first_group_or_whole,
    },
    Rule {
        kind: "github_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        span: whole_match,
    },
    Rule {
        kind: "gitlab_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)gl(?:pat|ptt|dt|rt|soat)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]{2,}){0,2}",
        span: whole_match,
    },
    Rule {
        kind: "slack_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)(?:xox[baprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})",
        span: whole_match,
    },
    // The path of an incoming-webhook URL is the credential: anyone holding it can post.
    Rule {
        kind: "slack_webhook",
        placeholder: "[TOKEN]",
        pattern: r"hooks\.slack\.com/services/([A-Za-z0-9_/-]{20,})",
        span: first_group_or_whole,
    },
    Rule {
        kind: "google_api_key",
        placeholder: "[API_KEY]",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{30,}",
        span: whole_match,
    },
    Rule {
        kind: "npm_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        span: whole_match,
    },
    Rule {
        kind: "huggingface_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30,}",
        span: whole_match,
    },
    // PyPI API tokens are macaroons whose base64 always begins with the same header.
    Rule {
        kind: "pypi_token",
        placeholder: "[TOKEN]",
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        span: whole_match,
    },
    // Vendor formats with a recognisable prefix or shape. Each is specific enough to be taken
    // wherever it appears, in prose as well as in settings.
    Rule {
        kind: "api_key",
        placeholder: "[API_KEY]",
        pattern: concat!(
            r"(?-u:\b)(?:GOCSPX-[A-Za-z0-9_-]{24,}|ya29\.[A-Za-z0-9_-]{30,}|dop_v1_[a-f0-9]{64}|doo_v1_[a-f0-9]{64}",
            r"|HRKU-[A-Za-z0-9_-]{30,}|hv[sbr]\.[A-Za-z0-9_-]{24,}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
            r"|dapi[a-f0-9]{32}(?:-[0-9])?|CFPAT-[A-Za-z0-9_-]{40,}|fo1_[A-Za-z0-9_-]{30,}|nfp_[A-Za-z0-9]{30,}",
            r"|ATBB[A-Za-z0-9_=.-]{28,}|ATATT3[A-Za-z0-9_=-]{50,}|cio[A-Za-z0-9]{32}|dckr_pat_[A-Za-z0-9_-]{20,}",
            r"|rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}|sntry[su]_[A-Za-z0-9_=+/-]{40,}|NRAK-[A-Z0-9]{27}",
            r"|glc_[A-Za-z0-9_+/=-]{32,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{37}|pplx-[A-Za-z0-9]{40,}",
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|key-[a-f0-9]{32}|[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}",
            r"|[a-f0-9]{32}-us[0-9]{1,2}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|EAAA[A-Za-z0-9_-]{56,}",
            r"|sq0(?:csp|atp)-[A-Za-z0-9_-]{22,}|whsec_[A-Za-z0-9+/=]{24,}|access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}",
            r"|lin_(?:api|oauth)_[A-Za-z0-9]{32,}|secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,}",
            r"|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}|LTAI[A-Za-z0-9]{12,30}|AKID[A-Za-z0-9]{13,40}",
            r"|SK[a-f0-9]{32}|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
            r"|[MN][A-Za-z0-9]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?-u:\b)",
        ),
        span: whole_match,
    },
    // A Google OAuth refresh token (`1//…`) and a Telegram bot token (`123456789:AA…`), which
    // appears glued to `bot` in API URLs, so it has no word boundary in front.
    Rule {
        kind: "api_key",
        placeholder: "[TOKEN]",
        pattern: r"(?:(?-u:\b)1//[A-Za-z0-9_-]{40,}|[0-9]{8,10}:AA[A-Za-z0-9_-]{32,})",
        span: not_glued_to_digits,
    },
    // The secret half of a Twilio key pair right after its account SID: `Client('AC…', '…')`.
    Rule {
        kind: "api_key",
        placeholder: "[SECRET]",
        pattern: r#"(?-u:\b)AC[a-f0-9]{32}["']?[ \t]*[,:][ \t]*["']?([a-f0-9]{32})(?-u:\b)"#,
        span: first_group_or_whole,
    },
    // Webhook URLs whose path is the credential: Discord, Feishu/Lark, Microsoft Teams, and a
    // Sentry DSN (`https://<key>@o1.ingest.sentry.io/…`).
    Rule {
        kind: "webhook",
        placeholder: "[TOKEN]",
        pattern: concat!(
            r"discord(?:app)?\.com/api/webhooks/([0-9]{5,}/[A-Za-z0-9_-]{20,})",
            r"|open-apis/bot/v2/hook/([A-Za-z0-9-]{20,})",
            r"|webhook\.office\.com/webhookb2/([^\s'\x22<>]{20,})",
            r"|://([a-f0-9]{32})@[A-Za-z0-9.-]*sentry",
        ),
        span: first_group_or_whole,
    },
    // Azure storage account keys and SAS signatures, in connection strings and URLs.
    Rule {
        kind: "azure_key",
        placeholder: "[SECRET]",
        pattern: concat!(
            r"(?i)(?:AccountKey|SharedAccessKey|SharedAccessSignature)[ \t]*=[ \t]*([A-Za-z0-9+/%=]{20,})",
            r"|[?&;\x22' ]sig=([A-Za-z0-9+/%=]{20,})",
        ),
        span: first_group_or_whole,
    },
    // Cookies carry sessions: the whole value (before the `name=value` rules see its parts) of a `Cookie:` or `Set-Cookie:` header goes.
    Rule {
        kind: "cookie",
        placeholder: "[COOKIE]",
        pattern: r#"(?i)(?-u:\b)cookie[ \t]*:[ \t]*(?P<bare>[^\s'"][^\r\n'"]*)"#,
        span: secret_value,
    },
    // `password=…`, `"api_key": "…"`, `DB_PASSWORD: …`, `?access_token=…`, `密码：…`. The name
    // must end with the keyword (so `max_tokens`, `tokenizer` and `secretName` are left alone) and
    // only the value is replaced, so the text still says which setting it was.
    Rule {
        kind: "secret_assignment",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)(?:[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_ -]?key|access[_-]?key|private[_-]?key"#,
            r#"|secret[_ -]?key(?:[_-]?base)?|app[_-]?(?:key|secret)|encryption[_-]?key|signing[_-]?key|master[_-]?key"#,
            r#"|key[_-]data|token)|密码|口令|密钥|秘钥|令牌)(?:["']\]?)?[ \t]*(?:=>|:=|[:=：])[ \t]*"#,
            value!(),
        ),
        span: secret_value,
    },
    // Shorter names that are also ordinary words or parts of words (`pass`, `pwd`, `auth`, `sig`,
    // `key`, `credentials`): only as a whole name or after a separator or camel case, and only
    // when the value looks generated, so `auth: required` and `key: my-config` stay.
    Rule {
        kind: "secret_assignment",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?P<name>(?-u:\b)(?i:[a-z0-9_.-]*[_.-])?(?i:pass|pwd|auth|sig|key|credentials?)"#,
            r#"|[A-Za-z0-9]*[a-z0-9](?:Key|Pass|Pwd|Auth|Credentials?))(?-u:\b)(?:["']\]?)?[ \t]*(?:=>|:=|[:=])[ \t]*"#,
            value!(),
        ),
        span: generated_value,
    },
    // Environment variables whose name says secret anywhere in it: `SECRET_KEY_BASE=…`,
    // `DJANGO_SECRET_KEY=…`, `SMTP_PASS=…`, `TENCENTCLOUD_SECRET_ID=…`.
    Rule {
        kind: "secret_assignment",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?:^|[\s;&|(])(?:export[ \t]+)?(?P<name>[A-Z][A-Z0-9_]*(?:KEY|SECRET|TOKEN|PASS|PWD|AUTH|CREDENTIALS?|SIG|SIGNATURE)"#,
            r#"[A-Z0-9_]*)[ \t]*=[ \t]*"#,
            value!(),
        ),
        span: generated_value,
    },
    // XML settings: `<password>…</password>`, `<property name="password" value="…"/>`.
    Rule {
        kind: "secret_assignment",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)<(?:[a-z_-]+:)?[a-z_.-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key)>(?P<bare>[^<\s][^<\n]{0,200}?)</"#,
            r#"|(?i)name=["'][a-z_.-]*(?:password|passwd|secret|token|api[_-]?key)["'][ \t]+value=["'](?P<dq>[^"'\n]{1,200})["']"#,
        ),
        span: secret_value,
    },
    // The same as command-line flags separated by a space: `--password hunter2`, `--token abc`.
    Rule {
        kind: "secret_assignment",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)(?:^|[ \t])--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|secret|api-?key|token)[ \t]+"#,
            r#"(?:"(?P<dq>[^"\r\n]{1,200})"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>[^\s"'`;&|]+))"#,
        ),
        span: secret_value,
    },
    // Passwords given to tools as short flags: `mysql -pSECRET`, `sshpass -p SECRET`,
    // `docker login -p SECRET`, `redis-cli -a SECRET`, `ldapsearch -w SECRET`, `smbclient -U u%SECRET`,
    // `openssl … -passout pass:SECRET`, `echo 'u:SECRET' | chpasswd`, `cargo login TOKEN`.
    Rule {
        kind: "cli_password",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?-u:\b)[^\n|;&]*?[ \t]-p"#,
            value!(),
        ),
        span: cli_value,
    },
    Rule {
        kind: "cli_password",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?:(?-u:\b)sshpass(?:[ \t]+-[A-Za-z])*?[ \t]+-p[ \t]*"#,
            r#"|(?-u:\b)(?:docker|podman|nerdctl|buildah|skopeo|oras|az|cf|helm[ \t]+registry)[ \t]+login(?-u:\b)[^\n|;&]*?[ \t]-p[ \t]+"#,
            r#"|(?-u:\b)(?:sqlcmd|bcp|osql)(?-u:\b)[^\n|;&]*?[ \t]-P[ \t]+"#,
            r#"|(?-u:\b)redis-cli(?-u:\b)[^\n|;&]*?[ \t]-a[ \t]+|(?-u:\b)ldap[a-z]+(?-u:\b)[^\n|;&]*?[ \t]-[wy][ \t]+"#,
            r#"|[ \t]-pass(?:in|out)[ \t]+pass:|(?-u:\b)cargo[ \t]+login[ \t]+)"#,
            value!(),
        ),
        span: cli_value,
    },
    Rule {
        kind: "cli_password",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"[ \t]-U[ \t]+[^\s%'"]+%(?P<bare>[^\s'"]+)"#,
            r#"|(?-u:\b)echo[ \t]+['"]?[^\s:'"]+:(?P<sq>[^\s'"]+)['"]?[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd"#,
        ),
        span: cli_value,
    },
    // A `.pgpass` line: `host:port:database:user:password`.
    Rule {
        kind: "pgpass",
        placeholder: "[SECRET]",
        pattern: r"(?m)(?:^|[ \t])[A-Za-z0-9*._-]+:(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:(?P<bare>[^\s]+)[ \t]*$",
        span: secret_value,
    },
    // HTTP headers that carry a credential: `X-API-Key: …`, `X-Auth-Key: …`, `Private-Token: …`,
    // and `Authorization:` with a scheme other than Bearer and Basic (`Token`, `Bot`, `SSO-Key`).
    Rule {
        kind: "http_header",
        placeholder: "[TOKEN]",
        pattern: concat!(
            r#"(?i)(?:(?-u:\b)(?:x-[a-z-]*(?:key|token|secret|auth|signature)|api-?key|private-token)["']?[ \t]*:[ \t]*["']?"#,
            r#"|(?-u:\b)authorization["']?[ \t]*:[ \t]*["']?(?:token|bot|sso-key|apikey|api-key|key|digest)[ \t]+)"#,
            r#"(?P<bare>[^\s'"]{8,})"#,
        ),
        span: secret_value,
    },
    // Secrets in English prose: "the admin password is …", "use the token … for CI",
    // "pw …", "the storage account key is …". Bare `key` needs a verb (`key is …`) since "key"
    // is also an ordinary noun ("blake3 key …"); the value must look generated.
    Rule {
        kind: "secret_in_prose",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)(?-u:\b)(?P<name>password|passphrase|passcode|passwd|pw|pwd|secret|token|api[ -]key|access[ -]key"#,
            r#"|(?:account|private|secret|signing|license|master) key|key(?:[ \t]+(?:is|was))|credentials?)(?-u:\b)"#,
            r#"(?:[ \t]+(?:is|was|are|of|for|set to|is now|to|now|=|:|->))*[ \t]*[:=]?[ \t]+["'“]?"#,
            r#"(?P<bare>[^\s"'”,;，。；、)]{6,200})"#,
        ),
        span: prose_value,
    },
    // "credentials are deploy / hunter2", "login: deploy:hunter2".
    Rule {
        kind: "secret_in_prose",
        placeholder: "[SECRET]",
        pattern: r#"(?i)(?-u:\b)credentials?[ \t]+(?:are|is|:)[ \t]+[^\s/:]+[ \t]*[/:][ \t]*(?P<bare>[^\s"',;]{6,200})"#,
        span: cli_value,
    },
    // Secrets in Chinese prose, with or without a colon: 密码是…, 密钥…, 令牌为…, 口令设置成….
    Rule {
        kind: "secret_in_prose",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?i)(?:(?P<name>密码|口令|密钥|秘钥|私钥|令牌)[ \t]*(?:是|为|：|:|=|设置成|设置为|设成|设为|改成|改为|是：)?"#,
            // English names only with a Chinese verb or colon: `TokenBucket…` is an identifier.
            r#"|(?-u:\b)(?:app ?secret|secret ?key|api ?key|token)[ \t]*(?:是|为|：|设置成|设置为|设成|设为|改成|改为))[ \t]*"#,
            r#"(?P<bare>[A-Za-z0-9_+/=!@#$%^&*.~-]{6,200})"#,
        ),
        span: prose_value,
    },
    // `curl -u user:pass`, `--user=user:pass`: HTTP basic credentials on a command line.
    Rule {
        kind: "cli_credentials",
        placeholder: "[CREDENTIALS]",
        pattern: r#"(?:^|[ \t])(?:-u[ \t]*|--user[ \t=]+)["']?([^\s:'"]+:[^\s'"]+)"#,
        span: cli_credentials,
    },
    // The user name in a home directory identifies a person; the rest of the path is what makes an
    // experience useful, so only the name goes.
    Rule {
        kind: "home_dir",
        placeholder: "[REDACTED]",
        pattern: r#"/(?:Users|home)/([^/\\\s"'`<>:;,()\[\]{}|*?$%=]+)"#,
        span: home_dir_user,
    },
    Rule {
        kind: "home_dir",
        placeholder: "[REDACTED]",
        pattern: concat!(
            r#"(?i)(?-u:\b)[a-z]:(?:\\\\|\\|/)(?:users|documents and settings)(?:\\\\|\\|/)"#,
            r#"([^/\\\s"'`<>:;,()\[\]{}|*?$%=]+)"#,
        ),
        span: home_dir_user,
    },
    Rule {
        kind: "email",
        placeholder: "[EMAIL]",
        pattern: concat!(
            r"(?-u:\b)([A-Za-z0-9._%+-]+)@",
            r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?-u:\b)",
        ),
        span: email,
    },
    // Chinese resident identity numbers: region, birth date, sequence and a check digit, which
    // is verified so that an 18-digit snowflake id that happens to contain a date is left alone.
    Rule {
        kind: "id_number",
        placeholder: "[ID_NUMBER]",
        pattern: r"[1-9][0-9]{5}(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx]",
        span: chinese_id_number,
    },
    // International numbers with a leading `+` and 10 to 15 digits, with the usual separators.
    Rule { kind: "phone", placeholder: "[PHONE]", pattern: r"\+[0-9][0-9 ().-]{8,24}[0-9]", span: international_phone },
    // Chinese mobile numbers: 11 digits starting 13–19, optionally grouped 3-4-4.
    Rule { kind: "phone", placeholder: "[PHONE]", pattern: r"1[3-9][0-9](?:[ -]?[0-9]{4}){2}", span: chinese_mobile },
    // Chinese landlines with an area code: 010-12345678, 0755-1234567.
    Rule { kind: "phone", placeholder: "[PHONE]", pattern: r"0[1-9][0-9]{1,2}-[0-9]{7,8}", span: chinese_landline },
    // North American numbers: 555-123-4567, 555.123.4567, (555) 123-4567, 1-800-555-1234.
    // Space-separated groups are not taken: "100 200 3000" is far more often a list of numbers.
    Rule {
        kind: "phone",
        placeholder: "[PHONE]",
        pattern: r"(?:1[ .-])?(?:\([0-9]{3}\) ?|[0-9]{3}([.-]))[0-9]{3}([ .-])[0-9]{4}",
        span: north_american_phone,
    },
    Rule {
        kind: "ip",
        placeholder: "[IP]",
        pattern: r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
        span: ipv4,
    },
    // IPv6: all eight groups, or a `::`-compressed form. Runs after IPv4 so that `::ffff:10.0.0.1`
    // keeps its prefix and loses only the embedded IPv4 address.
    Rule {
        kind: "ip",
        placeholder: "[IP]",
        pattern: concat!(
            r"(?i)(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}",
            r"|(?:[0-9a-f]{1,4}:){1,7}:(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,5})?",
            r"|::[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}",
        ),
        span: ipv6,
    },
];

fn whole_match(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    caps.get(0).map(|whole| whole.range())
}

/// The body of a PEM block whose END line is missing (a log cut short): base64 lines and
/// `Proc-Type:`-style headers, separated by newlines or by escaped `\n` inside a JSON string.
static TRUNCATED_PEM_BODY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\n\\]*))*").expect("pem body pattern compiles")
});

/// Extends a BEGIN line to the end of its block. Base64 has no `-`, so the next `-----` after the
/// BEGIN line is the END line of an intact block. Looking only that far (rather than for an END
/// line anywhere later) keeps text with many unterminated BEGIN lines linear, not quadratic.
fn pem_block(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let header = caps.get(0)?;
    let rest = &text[header.end()..];
    if let Some(marker) = rest.find("-----") {
        let after_marker = &rest[marker..];
        let end_line_len = after_marker[5..].find("-----").map(|close| close + 10);
        if let Some(end_line_len) = end_line_len
            && after_marker.starts_with("-----END")
            && after_marker[..end_line_len].contains("PRIVATE KEY")
        {
            return Some(header.start()..header.end() + marker + end_line_len);
        }
    }
    let body = TRUNCATED_PEM_BODY.find(rest).map_or(0, |body| body.end());
    Some(header.start()..header.end() + body)
}

fn first_group_or_whole(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    caps.iter().skip(1).flatten().next().or_else(|| caps.get(0)).map(|found| found.range())
}

fn byte_before(text: &str, idx: usize) -> Option<u8> {
    idx.checked_sub(1).map(|before| text.as_bytes()[before])
}

fn byte_at(text: &str, idx: usize) -> Option<u8> {
    text.as_bytes().get(idx).copied()
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether `value` is a stand-in rather than a secret: a placeholder we wrote earlier, an
/// environment or template reference, a masked value, or a code expression that reads the secret
/// from somewhere else. Replacing those would hide useful information and protect nothing.
fn is_reference_not_secret(value: &str) -> bool {
    let Some(first) = value.chars().next() else { return true };
    if matches!(first, '[' | '$' | '<' | '{' | '%' | '*' | '=' | '(' | '.') {
        return true;
    }
    let lowered = value.to_ascii_lowercase();
    const NON_SECRETS: &[&str] =
        &["null", "none", "nil", "true", "false", "undefined", "empty", "required", "optional", "string", "str", "..."];
    if NON_SECRETS.contains(&lowered.as_str()) || lowered.bytes().all(|byte| byte == b'x') {
        return true;
    }
    // `process.env.TOKEN`, `os.environ[...]`, `config.db.password`, `self.api_key`, `getToken()`.
    const CODE_ROOTS: &[&str] = &[
        "process",
        "os",
        "env",
        "self",
        "this",
        "config",
        "cfg",
        "conf",
        "settings",
        "secrets",
        "vars",
        "ctx",
        "context",
        "options",
        "opts",
        "args",
        "params",
        "request",
        "req",
        "response",
        "res",
        "credentials",
        "creds",
    ];
    let root = lowered.split(['.', '[', '(']).next().unwrap_or("");
    let has_accessor = lowered.len() > root.len();
    (has_accessor && CODE_ROOTS.contains(&root)) || lowered.contains("()")
}

fn url_credentials(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let userinfo = caps.get(1)?;
    let password = userinfo.as_str().split_once(':').map_or("", |(_, password)| password);
    if is_reference_not_secret(password) {
        return None;
    }
    Some(userinfo.range())
}

/// `Bearer` is also an ordinary word ("a Bearer token", "Bearer authentication"), so what follows
/// it must look generated: it contains a digit, or it is too long to be a word.
fn bearer_token(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let token = caps.get(1)?;
    let has_digit = token.as_str().bytes().any(|byte| byte.is_ascii_digit());
    let looks_generated = (has_digit && token.len() >= 8) || token.len() >= 32;
    looks_generated.then(|| token.range())
}

/// `sk-` also starts words (`sk-learn-compatible-estimators`); real keys are random and so, with
/// overwhelming probability, contain a digit.
fn sk_api_key(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let key = caps.get(0)?;
    key.as_str()[3..].bytes().any(|byte| byte.is_ascii_digit()).then(|| key.range())
}

/// The value of a named-group match (`dq`, `sq` or `bare`), unless it is a stand-in.
fn secret_value(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let (value, quoted) = value_group(caps)?;
    // An unquoted value at the end of a sentence or inside brackets should not take the closing
    // punctuation with it: `{password: hunter2}` keeps its `}`.
    let kept = if quoted { value.as_str() } else { value.as_str().trim_end_matches(['.', ')', ']', '}', '>']) };
    // The untrimmed value too: trimming `getToken()` to `getToken(` hides the call.
    if is_reference_not_secret(kept) || is_reference_not_secret(value.as_str()) || kept.contains('[') {
        return None;
    }
    Some(value.start()..value.start() + kept.len())
}

fn value_group<'t>(caps: &Captures<'t>) -> Option<(regex::Match<'t>, bool)> {
    if let Some(quoted) = caps.name("dq").or_else(|| caps.name("sq")) {
        return Some((quoted, true));
    }
    caps.name("bare").map(|bare| (bare, false))
}

/// Like [`secret_value`], for names that are also ordinary words: the value must look generated.
fn generated_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = &text[span.clone()];
    let name = caps.name("name").map_or(String::new(), |name| name.as_str().to_ascii_lowercase());
    // Public keys are not secrets, and `session_key` is KnowHub's own routing id, not a key.
    if name.contains("public") || name.ends_with("session_key") || value.contains("://") {
        return None;
    }
    // `pass`/`pwd` values may be weak human passwords; under `auth`, `sig` or `key` a value with
    // a digit is as often a setting (`auth: oauth2`), so it must look machine-made.
    let password_like = name.ends_with("pass") || name.ends_with("pwd") || name.contains("credential");
    let secret_like = if password_like || name.contains("secret") || name.contains("token") || name.contains("password")
    {
        looks_generated(value)
    } else {
        looks_machine_made(value)
    };
    secret_like.then_some(span)
}

/// A password given on a command line: anything but a stand-in or an English word of the
/// surrounding prose ("sshpass -p is insecure").
fn cli_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = &text[span.clone()];
    let is_word = value.len() <= 4 && value.bytes().all(|byte| byte.is_ascii_lowercase());
    (!is_word && !value.starts_with('-')).then_some(span)
}

/// A secret named in prose. Passwords may be weak (`hunter2`), so for them a digit or symbol
/// is enough; a token, key or secret must look machine-made (several changes between letters,
/// digits and case, or long and mixed), since "token" and "key" also precede ordinary words and
/// identifiers ("the token cl100k_base").
fn prose_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = text[span.clone()].trim_end_matches(['.', ':', '!', '?']);
    // A colon inside is a structured name (`v2:user:1234`), not a generated secret.
    if value.len() < 6 || value.contains(':') || value.starts_with(['/', '~', '#', '@', '-']) {
        return None;
    }
    let name = caps.name("name").map(|name| name.as_str().to_ascii_lowercase());
    // Chinese names are checked like passwords: the rule already needs the value glued to the
    // name or after a verb (是, 为, 设置成), which ordinary Chinese prose does not produce.
    let password_like =
        name.as_deref().is_none_or(|name| name.starts_with("pass") || name.starts_with("pw") || !name.is_ascii());
    let ok = if password_like { looks_generated(value) } else { looks_machine_made(value) };
    ok.then_some(span.start..span.start + value.len())
}

/// At least six characters, with a letter and a digit, or with mixed case and a symbol, and not
/// a version number or a word: the least a set password or key has.
fn looks_generated(value: &str) -> bool {
    if value.len() < 6 {
        return false;
    }
    let has_digit = value.bytes().any(|byte| byte.is_ascii_digit());
    let has_alpha = value.bytes().any(|byte| byte.is_ascii_alphabetic());
    let has_upper = value.bytes().any(|byte| byte.is_ascii_uppercase());
    let has_lower = value.bytes().any(|byte| byte.is_ascii_lowercase());
    let has_symbol = value.bytes().any(|byte| !byte.is_ascii_alphanumeric() && !matches!(byte, b'.' | b'-' | b'_'));
    let version_like = value.bytes().all(|byte| byte.is_ascii_digit() || byte == b'.');
    // Code, not a value: `blake3::hash(bytes)`, `getenv("X")`.
    let code_like = value.contains("::") || value.contains('(');
    !version_like
        && !code_like
        && ((has_digit && has_alpha)
            || (has_upper && has_lower && has_symbol)
            || (has_symbol && has_alpha && value.len() >= 12))
}

/// Random-looking: at least three changes between letter and digit or lower and upper case
/// (`Zx9Qw8…`), or 20+ characters with letters and digits. Identifiers made of words
/// (`cl100k_base`, `max_tokens`) have fewer.
fn looks_machine_made(value: &str) -> bool {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |byte: u8| match byte {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Digit,
        _ => Class::Other,
    };
    let mut transitions = 0;
    let mut previous = Class::Other;
    for byte in value.bytes() {
        let current = class(byte);
        if current != Class::Other && previous != Class::Other && current != previous {
            transitions += 1;
        }
        previous = current;
    }
    let has_digit = value.bytes().any(|byte| byte.is_ascii_digit());
    let has_alpha = value.bytes().any(|byte| byte.is_ascii_alphabetic());
    // A digit is required: CamelCase identifiers (`BucketRateLimiter`) change case often too.
    has_digit && has_alpha && (transitions >= 4 || value.len() >= 20)
}

/// A Telegram token glued to `bot` in a URL is fine; glued to more digits it is some other number.
fn not_glued_to_digits(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(whole.range())
}

fn home_dir_user(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let user = caps.get(1)?;
    // Directories under /Users and C:\Users that belong to nobody in particular, and Homebrew's
    // fixed prefix on Linux (`/home/linuxbrew/.linuxbrew`), which is not a person.
    const NOT_PEOPLE: &[&str] = &["Shared", "Public", "Default", "All", "Guest", "linuxbrew"];
    (!NOT_PEOPLE.contains(&user.as_str())).then(|| user.range())
}

/// `git@github.com:owner/repo.git` is an SSH remote, not anyone's address.
fn email(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let local_part = caps.get(1)?;
    if local_part.as_str().eq_ignore_ascii_case("git") {
        return None;
    }
    caps.get(0).map(|whole| whole.range())
}

/// The greedy pattern may run on into a following number ("+86 138 1234 5678 123 items"), so the
/// number is cut back to the longest prefix that ends a digit group and holds 10 to 15 digits.
fn international_phone(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(is_word_byte) {
        return None;
    }
    let bytes = whole.as_str().as_bytes();
    let mut n_digits = 0;
    let mut best_end = None;
    for (idx, &byte) in bytes.iter().enumerate() {
        if !byte.is_ascii_digit() {
            continue;
        }
        n_digits += 1;
        let ends_group = bytes.get(idx + 1).is_none_or(|next| !next.is_ascii_digit());
        if ends_group && (10..=15).contains(&n_digits) {
            best_end = Some(idx + 1);
        }
    }
    let end = whole.start() + best_end?;
    if byte_at(text, end).is_some_and(is_word_byte) {
        return None;
    }
    Some(whole.start()..end)
}

fn chinese_mobile(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    // Inside a longer number, a hex string, an identifier or a decimal: not a phone number.
    if before.is_some_and(|byte| is_word_byte(byte) || byte == b'.' || byte == b'+')
        || after.is_some_and(is_word_byte)
        || (after == Some(b'.') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit()))
    {
        return None;
    }
    // Grouped with spaces, it must not be part of a longer list of numbers ("150 1000 2000 5000").
    if whole.as_str().contains(' ') {
        let digit_before =
            before == Some(b' ') && whole.start() >= 2 && text.as_bytes()[whole.start() - 2].is_ascii_digit();
        let digit_after =
            after == Some(b' ') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit());
        if digit_before || digit_after {
            return None;
        }
    }
    Some(whole.range())
}

fn north_american_phone(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    // 555-123-4567 and 555.123.4567, but not a mix such as 555.123-4567.
    if let (Some(first), Some(second)) = (caps.get(1), caps.get(2))
        && first.as_str() != second.as_str()
    {
        return None;
    }
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b'.' | b'-' | b'+' | b'/'))
        || after.is_some_and(is_word_byte)
        || (matches!(after, Some(b'.' | b'-'))
            && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit()))
    {
        return None;
    }
    Some(whole.range())
}

fn cli_credentials(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let userinfo = caps.get(1)?;
    let (user, password) = userinfo.as_str().split_once(':')?;
    // `docker run -u 1000:1000` is a uid and gid, not a login.
    let numeric = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if (numeric(user) && numeric(password)) || is_reference_not_secret(password) {
        return None;
    }
    Some(userinfo.range())
}

fn chinese_id_number(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(is_word_byte)
        || byte_at(text, whole.end()).is_some_and(is_word_byte)
    {
        return None;
    }
    // GB 11643: weighted sum of the first 17 digits modulo 11 selects the check character.
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECK: &[u8; 11] = b"10X98765432";
    let bytes = whole.as_str().as_bytes();
    let sum: u32 = bytes[..17].iter().zip(WEIGHTS).map(|(&digit, weight)| u32::from(digit - b'0') * weight).sum();
    (CHECK[(sum % 11) as usize] == bytes[17].to_ascii_uppercase()).then(|| whole.range())
}

fn chinese_landline(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b'-' | b'.' | b'/'))
        || after.is_some_and(|byte| is_word_byte(byte) || byte == b'-')
    {
        return None;
    }
    Some(whole.range())
}

/// Leaves loopback and link-local addresses, which identify nobody, and the many `a::b`-shaped
/// things in code (`u8::MAX`, `e::a1`) that are not addresses: those are glued to an identifier,
/// have no digit, or are too short to be a routable address.
fn ipv6(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b':' | b'.'))
        || after.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b':' | b'.'))
    {
        return None;
    }
    let address = whole.as_str().to_ascii_lowercase();
    let has_digit = address.bytes().any(|byte| byte.is_ascii_digit());
    let n_hex_digits = address.bytes().filter(u8::is_ascii_hexdigit).count();
    let link_local = ["fe8", "fe9", "fea", "feb"].iter().any(|prefix| address.starts_with(prefix));
    if !has_digit || n_hex_digits < 5 || address == "::1" || link_local {
        return None;
    }
    Some(whole.range())
}

/// Addresses that identify nobody and appear constantly in engineering notes: loopback, the
/// unspecified address, netmasks and broadcast, the cloud metadata endpoint, and public DNS
/// resolvers (including the ones common in China).
fn is_well_known_ip(ip: &str) -> bool {
    const WELL_KNOWN: &[&str] = &[
        "0.0.0.0",
        "169.254.169.254",
        "8.8.8.8",
        "8.8.4.4",
        "1.1.1.1",
        "1.0.0.1",
        "9.9.9.9",
        "114.114.114.114",
        "223.5.5.5",
        "223.6.6.6",
        "119.29.29.29",
    ];
    ip.starts_with("127.") || ip.starts_with("255.") || WELL_KNOWN.contains(&ip)
}

/// Four dotted octets are an address unless the context says version number: `v1.2.3.4`,
/// `pkg@1.2.3.4`, `foo-1.2.3.4.tar.gz`, `==1.2.3.4`, `version 1.2.3.4`, or more than four parts.
fn ipv4(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    // All four parts single digits (`1.2.3.4`, `4.2.1.0`) is how versions look; the few thousand
    // public addresses of that shape are not worth mangling every four-part version number for.
    if is_well_known_ip(whole.as_str()) || whole.as_str().split('.').all(|octet| octet.len() == 1) {
        return None;
    }
    let start = whole.start();
    let before = byte_before(text, start);
    let after = byte_at(text, whole.end());
    let version_prefix = match before {
        Some(byte) if is_word_byte(byte) || matches!(byte, b'.' | b'@' | b'^' | b'~' | b'=' | b'>' | b'<') => {
            // A single `=` is an assignment (`host=10.0.0.5`); `==`, `>=`, `<=` are version pins.
            byte != b'=' || matches!(byte_before(text, start - 1), Some(b'=' | b'>' | b'<' | b'!' | b'~'))
        }
        Some(b'-') => byte_before(text, start - 1).is_some_and(|byte| byte.is_ascii_alphabetic()),
        _ => false,
    };
    if version_prefix {
        return None;
    }
    let more_parts =
        matches!(after, Some(b'.')) && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit());
    let suffix = after.is_some_and(is_word_byte)
        || (after == Some(b'-') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_alphabetic()));
    if more_parts || suffix {
        return None;
    }
    let preceding = text[..start].trim_end_matches([' ', '\t', ':']);
    let preceding_word = preceding.rsplit(|ch: char| !ch.is_alphanumeric()).next().unwrap_or("").to_lowercase();
    if matches!(preceding_word.as_str(), "version" | "ver" | "v" | "release" | "build" | "版本" | "版本号") {
        return None;
    }
    Some(whole.range())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redacts `input`, checks the output, and checks that redacting again changes nothing.
    fn check(input: &str, expected: &str) {
        let (redacted, _) = redact(input);
        assert_eq!(redacted, expected, "redacting {input:?}");
        let (again, found_again) = redact(&redacted);
        assert_eq!(again, redacted, "redaction is not idempotent for {input:?}");
        assert!(found_again.is_empty(), "second pass found {found_again:?} in {redacted:?}");
    }

    fn kinds(input: &str) -> Vec<(&'static str, usize)> {
        redact(input).1.into_iter().map(|redaction| (redaction.kind, redaction.count)).collect()
    }

    #[test]
    fn each_kind_is_redacted() {
        let cases: &[(&str, &str, &str)] = &[
            // home directories
            ("home_dir", "cd /Users/alice/proj && npm i", "cd /Users/[REDACTED]/proj && npm i"),
            ("home_dir", "error in /home/bob.smith/src/main.rs:12", "error in /home/[REDACTED]/src/main.rs:12"),
            ("home_dir", r"C:\Users\Carol\AppData\Local\npm", r"C:\Users\[REDACTED]\AppData\Local\npm"),
            ("home_dir", r#"{"path": "C:\\Users\\dave\\repo"}"#, r#"{"path": "C:\\Users\\[REDACTED]\\repo"}"#),
            ("home_dir", "C:/Users/erin/.cargo/bin", "C:/Users/[REDACTED]/.cargo/bin"),
            ("home_dir", "/mnt/c/Users/frank/code", "/mnt/c/Users/[REDACTED]/code"),
            ("home_dir", "PATH=/home/gina/.local/bin:/usr/bin", "PATH=/home/[REDACTED]/.local/bin:/usr/bin"),
            // emails
            ("email", "contact alice.smith+kb@example.co.uk now", "contact [EMAIL] now"),
            ("email", "<bob@corp.example.com>", "<[EMAIL]>"),
            // phones
            ("phone", "call 555-123-4567 or (555) 987-6543", "call [PHONE] or [PHONE]"),
            ("phone", "fax 555.123.4567", "fax [PHONE]"),
            ("phone", "toll free 1-800-555-1234", "toll free [PHONE]"),
            ("phone", "+14155552671 is the on-call", "[PHONE] is the on-call"),
            ("phone", "+44 20 7946 0958 (London)", "[PHONE] (London)"),
            ("phone", "+86 138 1234 5678 123 items", "[PHONE] 123 items"),
            ("phone", "+1 (415) 555-2671", "[PHONE]"),
            ("phone", "mobile 13812345678", "mobile [PHONE]"),
            ("phone", "138-1234-5678", "[PHONE]"),
            ("phone", "请拨打 010-12345678 或 0755-1234567", "请拨打 [PHONE] 或 [PHONE]"),
            ("id_number", "身份证号 11010519491231002X，", "身份证号 [ID_NUMBER]，"),
            ("id_number", "id=440304199001011233", "id=[ID_NUMBER]"),
            ("ip", "listen on [2001:db8:85a3::8a2e:370:7334]:443", "listen on [[IP]]:443"),
            ("ip", "addr 2001:0db8:85a3:0000:0000:8a2e:0370:7334 up", "addr [IP] up"),
            (
                "npm_token",
                "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
                "//registry.npmjs.org/:_authToken=[TOKEN]",
            ),
            ("huggingface_token", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "HF_TOKEN=[TOKEN]"),
            (
                "pypi_token",
                "password = pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmFiLTEyMzQtNTY3OC05YWJjLWRlZjAxMjM0NTY3OAACKlszLCJhYmMiXQ",
                "password = [TOKEN]",
            ),
            (
                "cli_credentials",
                "curl -u admin:s3cret https://api.example.com",
                "curl -u [CREDENTIALS] https://api.example.com",
            ),
            ("cli_credentials", "curl --user=deploy:pw1 http://x", "curl --user=[CREDENTIALS] http://x"),
            // IPv4
            ("ip", "ssh deploy@host failed on 10.0.0.5:22", "ssh deploy@host failed on [IP]:22"),
            ("ip", "curl http://192.168.1.100:8080/health", "curl http://[IP]:8080/health"),
            ("ip", "host=203.0.113.7", "host=[IP]"),
            ("ip", "::ffff:172.16.4.2", "::ffff:[IP]"),
            // secrets
            (
                "api_key",
                "OPENAI key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL works",
                "OPENAI key [API_KEY] works",
            ),
            ("api_key", "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz_0123-4567", "[API_KEY]"),
            ("api_key", "x-api-key: sk-ant-api03-AbCdEf0123456789_AbCdEf0123456789-xyzXYZ", "x-api-key: [API_KEY]"),
            ("bearer_token", "Authorization: Bearer abc123.def456-ghi789", "Authorization: Bearer [TOKEN]"),
            ("bearer_token", "-H 'authorization: bearer 9f8e7d6c5b4a3f2e1d0c'", "-H 'authorization: bearer [TOKEN]'"),
            ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [CREDENTIALS]"),
            ("aws_access_key_id", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=[API_KEY]"),
            ("aws_access_key_id", "temp key ASIAY34FZKBOKMUTVV7A", "temp key [API_KEY]"),
            (
                "aws_secret_key",
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [SECRET]",
            ),
            (
                "aws_secret_key",
                r#""SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","#,
                r#""SecretAccessKey": "[SECRET]","#,
            ),
            ("github_token", "GH token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", "GH token [TOKEN] ok"),
            ("github_token", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "[TOKEN]"),
            ("github_token", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "[TOKEN]"),
            (
                "github_token",
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQ",
                "[TOKEN]",
            ),
            ("gitlab_token", "glpat-xxxxXXXX1234yyyyZZZZ", "[TOKEN]"),
            ("slack_token", "SLACK_BOT=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK_BOT=[TOKEN]"),
            (
                "slack_webhook",
                "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                "https://hooks.slack.com/services/[TOKEN]",
            ),
            ("google_api_key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "key=[API_KEY]"),
            ("stripe_key", "STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE=[API_KEY]"),
            ("stripe_key", "rk_live_51H8abcdEFGHijklMNOPqrst", "[API_KEY]"),
            (
                "jwt",
                "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
                "token [TOKEN] end",
            ),
            ("secret_assignment", "password=hunter2", "password=[SECRET]"),
            ("secret_assignment", "DB_PASSWORD: 'correct horse battery'", "DB_PASSWORD: '[SECRET]'"),
            ("secret_assignment", r#"{"api_key": "abc123def456"}"#, r#"{"api_key": "[SECRET]"}"#),
            ("secret_assignment", "PGPASSWORD=s3cr3t psql -h db", "PGPASSWORD=[SECRET] psql -h db"),
            ("secret_assignment", "client_secret => 'Zx9-Qw8'", "client_secret => '[SECRET]'"),
            (
                "secret_assignment",
                "GET /cb?code=1&access_token=abcDEF123&x=1",
                "GET /cb?code=1&access_token=[SECRET]&x=1",
            ),
            ("secret_assignment", "spring.datasource.password=Pa55word.", "spring.datasource.password=[SECRET]."),
            ("secret_assignment", "{token: zzz999}", "{token: [SECRET]}"),
            ("secret_assignment", "mysql --password hunter2 -u root", "mysql --password [SECRET] -u root"),
            ("secret_assignment", "gh --api-key \"a b c\"", "gh --api-key \"[SECRET]\""),
            ("secret_assignment", "数据库密码：Abc12345，请勿外传", "数据库密码：[SECRET]，请勿外传"),
            (
                "url_credentials",
                "git clone https://x-access-token:abc123XYZ@github.com/org/repo.git",
                "git clone https://[CREDENTIALS]@github.com/org/repo.git",
            ),
            (
                "url_credentials",
                "DATABASE_URL=postgres://app:p%40ss@db.internal:5432/app",
                "DATABASE_URL=postgres://[CREDENTIALS]@db.internal:5432/app",
            ),
            ("url_credentials", "redis://:hunter2@cache:6379/0", "redis://[CREDENTIALS]@cache:6379/0"),
            (
                "private_key",
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xQ0\nabcdefghijklmnop\n-----END RSA PRIVATE KEY-----\ndone",
                "key:\n[PRIVATE_KEY]\ndone",
            ),
            (
                "private_key",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
                "[PRIVATE_KEY]",
            ),
            (
                "private_key",
                r#"{"key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}"#,
                r#"{"key": "[PRIVATE_KEY]\n"}"#,
            ),
            (
                "private_key",
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0ABCDEFGHIJKLMNOP\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
                "[PRIVATE_KEY]",
            ),
            // A log cut off before the END line: the base64 lines still go, the prose stays.
            (
                "private_key",
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBvYh1dMhTkA5vV0Sg3Z\nAoGBAM9tKxR1pQ2wZ8uH\n(truncated) then it failed",
                "[PRIVATE_KEY]\n(truncated) then it failed",
            ),
        ];
        for &(kind, input, expected) in cases {
            check(input, expected);
            let found = kinds(input);
            assert!(
                found.iter().any(|&(found_kind, _)| found_kind == kind),
                "{input:?}: expected {kind}, got {found:?}"
            );
        }
    }

    /// Formats that got through before (issue 14): each with its expected output, so the span
    /// kept (the name, the scheme, the host) is pinned too. The full catalogue is in
    /// `tests/data/redaction_catalogue.jsonl`.
    #[test]
    fn formats_from_the_hostile_review_are_redacted() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "azure_key",
                "DefaultEndpointsProtocol=https;AccountName=kb;AccountKey=q1w2E3r4T5y6U7i8O9p0aSdFgHjKlZxCvBnM+/==;EndpointSuffix=core",
                "DefaultEndpointsProtocol=https;AccountName=kb;AccountKey=[SECRET];EndpointSuffix=core",
            ),
            (
                "azure_key",
                "x.blob.core.windows.net/c?sv=2022&sp=r&sig=AbC123dEf456GhI789jKl012%3D",
                "x.blob.core.windows.net/c?sv=2022&sp=r&sig=[SECRET]",
            ),
            ("secret_assignment", "SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "SECRET_KEY_BASE=[SECRET]"),
            ("secret_assignment", "DJANGO_SECRET_KEY='django-insecure-a1b2c3d4e5'", "DJANGO_SECRET_KEY='[SECRET]'"),
            ("secret_assignment", "export SMTP_PASS=Zx9Qw8Er7T", "export SMTP_PASS=[SECRET]"),
            ("secret_assignment", "[database]\npwd = Abc123xyz789", "[database]\npwd = [SECRET]"),
            ("secret_assignment", "<password>Hunter2Hunter2</password>", "<password>[SECRET]</password>"),
            (
                "api_key",
                r#"{"client_secret": "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12"}"#,
                r#"{"client_secret": "[API_KEY]"}"#,
            ),
            ("api_key", "secret GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12 here", "secret [API_KEY] here"),
            (
                "api_key",
                "STRIPE_WEBHOOK_SECRET=whsec_AbCdEfGhIjKlMnOpQrStUvWxYz123456",
                "STRIPE_WEBHOOK_SECRET=[API_KEY]",
            ),
            (
                "api_key",
                "client.run('MTAxNTk4NzY1NDMyMTAxMjM0NQ.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789')",
                "client.run('[API_KEY]')",
            ),
            (
                "api_key",
                "curl https://api.telegram.org/bot1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
                "curl https://api.telegram.org/bot[TOKEN]/getMe",
            ),
            ("cli_password", "mysql -u root -pS3cretPass shop", "mysql -u root -p[SECRET] shop"),
            ("cli_password", "sshpass -p 'Tr0ub4dor' ssh deploy@bastion", "sshpass -p '[SECRET]' ssh deploy@bastion"),
            (
                "cli_password",
                "docker login -u me -p Dkr9pass registry.io",
                "docker login -u me -p [SECRET] registry.io",
            ),
            ("cli_password", "redis-cli -h cache -a R3disPass ping", "redis-cli -h cache -a [SECRET] ping"),
            ("pgpass", "db.internal:5432:app:app_user:Pg9pass7", "db.internal:5432:app:app_user:[SECRET]"),
            (
                "secret_in_prose",
                "machine api.example.com login deploy password N3tRcPass",
                "machine api.example.com login deploy password [SECRET]",
            ),
            (
                "secret_in_prose",
                "The admin password is Adm1nPass until Friday.",
                "The admin password is [SECRET] until Friday.",
            ),
            ("secret_in_prose", "use the token Tk3nAbCdEf9GhIj for CI", "use the token [SECRET] for CI"),
            ("secret_in_prose", "数据库的密码是Db2pass9，别外传", "数据库的密码是[SECRET]，别外传"),
            ("secret_in_prose", "API密钥Ak3yAbCdEf9GhIjKl已配置", "API密钥[SECRET]已配置"),
            ("secret_in_prose", "令牌是 Tk9AbCdEf3GhIjKl，有效期一天", "令牌是 [SECRET]，有效期一天"),
            ("secret_assignment", "-H 'X-API-Key: 0123456789abcdef0123'", "-H 'X-API-Key: [SECRET]'"),
            ("http_header", "Authorization: Token 0123456789abcdef0123", "Authorization: Token [TOKEN]"),
            ("cookie", "Cookie: sid=Ab3dEf9; csrftoken=Xy7", "Cookie: [COOKIE]"),
            (
                "webhook",
                "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2",
                "SENTRY_DSN=https://[TOKEN]@o1.ingest.sentry.io/2",
            ),
        ];
        for &(kind, input, expected) in cases {
            check(input, expected);
            let found = kinds(input);
            assert!(
                found.iter().any(|&(found_kind, _)| found_kind == kind),
                "{input:?}: expected {kind}, got {found:?}"
            );
        }
    }

    #[test]
    fn names_and_words_near_secrets_are_not_secrets() {
        let cases = [
            "the password is required and must be at least 12 characters",
            "the token is valid for one hour; tokens per second went up",
            "auth: required, key: my-config-map, pass: true",
            "sshpass -p is insecure; mysql -p prompts for the password",
            "docker login -u kbdemo --password-stdin",
            "the .pgpass format is hostname:port:database:username:password",
            "set the token cl100k_base in the tokenizer",
            "let key = blake3::hash(bytes).to_hex();",
            "SECRET_KEY_BASE is generated by rails secret",
            "密码必须至少包含 12 个字符，令牌桶每秒补充 100 个令牌",
            "Authorization header missing: 401",
        ];
        for input in cases {
            let (redacted, found) = redact(input);
            assert_eq!(redacted, input, "falsely redacted: {found:?}");
        }
    }

    #[test]
    fn ordinary_engineering_text_is_left_alone() {
        let cases = [
            "tsconfig.json paths: use @/ aliases",
            "vitest --run avoids watch mode",
            "upgraded to version 1.2.3 then 1.2.3.4",
            "v1.2.3.4 fixes it; pkg@1.2.3.4 and foo-1.2.3.4.tar.gz too",
            "pin requests==2.31.0.1 or >=10.0.0.1",
            "dev server on localhost:3000 and 127.0.0.1:8080, bind 0.0.0.0",
            "netmask 255.255.255.0, metadata at 169.254.169.254, dns 8.8.8.8 and 114.114.114.114",
            "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a reverted",
            "id 550e8400-e29b-41d4-a716-446655440000 stays",
            "git remote add origin git@github.com:owner/repo.git",
            "ssh://git@gitlab.com/group/project.git",
            "npm i @types/node@20.11.5 and lodash@4.17.21",
            "use a Bearer token in the Authorization header (Bearer authentication)",
            "sk-learn-compatible-estimators are fine",
            "set max_tokens: 4096 and tokenizer: cl100k_base",
            "secretName: my-tls-secret",
            "password=$DB_PASSWORD and token: ${GITHUB_TOKEN} and api_key=<your key>",
            "token = process.env.GH_TOKEN; password = config.db.password; key = getToken()",
            "password: [SECRET] was already redacted",
            "ran 150 1000 2000 5000 ms timeouts",
            "timestamp 1700000000123 and size 13812345678901",
            "/home/linuxbrew/.linuxbrew/bin/brew and /Users/Shared/cache",
            "the /home/[REDACTED]/proj path",
            "date 2024-01-15 10:30:00, ratio 3.14159, port 5432",
            "cargo build --release -p kb-core",
            "pass --token-file ./tok to read it from a file",
            "C++ 2023, a+b=c, x = 1234567890",
            "docker run -u 1000:1000 image and git push -u origin main",
            "18-digit snowflake 123456789012345678 and 110101199003078888 with a bad check digit",
            "Rust: u8::MAX, Vec::new(), e::a1, std::io; C++ a::b; time 12:30:45",
            "loopback ::1 and link-local fe80::1%eth0",
            "MSRV 1.88, order 1234-567-8901, ISBN 978-3-16-148410-0",
        ];
        for input in cases {
            let (redacted, found) = redact(input);
            assert_eq!(redacted, input, "falsely redacted: {found:?}");
            assert!(found.is_empty(), "{input:?}: {found:?}");
        }
    }

    #[test]
    fn clean_text_is_borrowed() {
        let (redacted, found) = redact("vitest --run avoids watch mode");
        assert!(matches!(redacted, Cow::Borrowed(_)));
        assert!(found.is_empty());
        // The pre-check fires on a version string that looks like an address, but nothing is
        // replaced, so the text is still not copied.
        let (redacted, _) = redact("v1.2.3.4");
        assert!(matches!(redacted, Cow::Borrowed(_)));
    }

    #[test]
    fn chinese_text_with_personal_data() {
        check("请联系张三，邮箱zhangsan@example.com，手机13812345678。", "请联系张三，邮箱[EMAIL]，手机[PHONE]。");
        check("电话：+86 138 1234 5678，地址 /home/张三/项目", "电话：[PHONE]，地址 /home/[REDACTED]/项目");
        check("服务器IP是10.1.2.3，密钥sk-abc123def456ghi789jkl012mno", "服务器IP是[IP]，密钥[API_KEY]");
        check("版本 1.2.3.4 已发布", "版本 1.2.3.4 已发布");
    }

    #[test]
    fn counts_are_reported_per_kind() {
        let input = "a@example.com b@example.com 10.0.0.1 10.0.0.2 10.0.0.3 /home/x/y";
        let mut found = kinds(input);
        found.sort();
        assert_eq!(found, vec![("email", 2), ("home_dir", 1), ("ip", 3)]);
    }

    #[test]
    fn a_secret_is_counted_once_under_its_most_specific_kind() {
        // The generic `api_key=` rule sees `[API_KEY]` and leaves it, so nothing is counted twice.
        assert_eq!(kinds("OPENAI_API_KEY=sk-abc123def456ghi789jkl012mno"), vec![("api_key", 1)]);
        assert_eq!(kinds("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a"), vec![("github_token", 1)]);
        assert_eq!(
            kinds("https://user:ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com"),
            vec![("url_credentials", 1)]
        );
        assert_eq!(kinds("token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"), vec![("jwt", 1)]);
    }

    #[test]
    fn private_key_block_goes_whole_before_other_rules_see_it() {
        // The body contains things other rules would match (an email, an address); the block is
        // taken first and reported once.
        let input =
            "-----BEGIN PRIVATE KEY-----\nowner a@b.com at 10.0.0.1\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----";
        check(input, "[PRIVATE_KEY]");
        assert_eq!(kinds(input), vec![("private_key", 1)]);
    }

    /// Regression: the PEM rule once searched for an END line anywhere after each BEGIN line, so
    /// text with many unterminated BEGIN lines took quadratic time (20 s for 700 KB). Each block
    /// now ends at the next `-----` marker.
    #[test]
    fn many_unterminated_private_key_headers_stay_linear() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xQ0abcd\n".repeat(5_000);
        let started = std::time::Instant::now();
        let (redacted, found) = redact(&text);
        eprintln!("5000 unterminated PEM headers: {:?}", started.elapsed());
        assert_eq!(found, vec![Redaction { kind: "private_key", count: 5_000 }]);
        assert_eq!(redacted, "[PRIVATE_KEY]\n".repeat(5_000));
    }

    #[test]
    fn two_private_key_blocks_with_text_between() {
        check(
            "a\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\nkeep me\n\
             -----BEGIN EC PRIVATE KEY-----\nBBBB\n-----END EC PRIVATE KEY-----\nz",
            "a\n[PRIVATE_KEY]\nkeep me\n[PRIVATE_KEY]\nz",
        );
    }

    #[test]
    fn redaction_is_idempotent_on_a_mixed_document() {
        let input = "\
            user alice (alice@example.com, +1 415 555 2671) on /Users/alice/work at 10.20.30.40\n\
            export OPENAI_API_KEY=sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz_0123\n\
            curl -H 'Authorization: Bearer abcdef123456' https://bob:pw123@api.example.com\n\
            password: hunter2, 密码=abc123";
        let (once, found) = redact(input);
        assert!(found.len() >= 6, "{found:?}");
        for secret in
            ["alice@", "415", "/Users/alice", "10.20.30.40", "sk-proj", "abcdef123456", "pw123", "hunter2", "abc123"]
        {
            assert!(!once.contains(secret), "{secret} survived in {once}");
        }
        let (twice, found_twice) = redact(&once);
        assert_eq!(twice, once);
        assert!(found_twice.is_empty());
    }

    /// Not a benchmark with thresholds: it prints what redaction costs on a large clean text and a
    /// large text with secrets, so a regression is visible when running with `--nocapture`.
    #[test]
    fn quick_bench_prints_throughput() {
        let clean_paragraph = "Ran vitest --run in the repo; tsconfig.json paths were wrong, fixed by \
            setting baseUrl. 使用 pnpm 安装依赖后构建成功，版本 1.2.3。 The build took 42s on CI.\n";
        let clean = clean_paragraph.repeat(10_000);
        let dirty = format!("{clean_paragraph}token=abc123 mail a@b.com at 10.0.0.1\n").repeat(2_000);
        // Compiling the patterns happens once per process; keep it out of the measurement.
        let _ = redact("warm up");
        for (label, text) in [("clean", &clean), ("dirty", &dirty)] {
            let started = std::time::Instant::now();
            let (redacted, _) = redact(text);
            let elapsed = started.elapsed();
            let mib = text.len() as f64 / (1024.0 * 1024.0);
            eprintln!("redact {label}: {mib:.2} MiB in {elapsed:?} ({:.1} MiB/s)", mib / elapsed.as_secs_f64());
            assert_eq!(matches!(redacted, Cow::Borrowed(_)), label == "clean");
        }
    }
}
