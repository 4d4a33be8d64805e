//! The redaction rules as data: one ordered table of patterns, placeholders and span checks.
//!
//! `redact.rs` compiles this table (`crate::matchset`) and applies the rules in table order, so
//! the order here is the order of application: a specific format must come before any generic
//! rule that would also match it (vendor token formats before `name=value`, for example). To
//! add a rule, add one entry at the place its specificity calls for, with a span check from
//! `spans.rs` (`whole_match` when the match itself is the secret); only a new kind of context
//! check needs new code there.

use std::ops::Range;

use regex::Captures;

use super::spans::*;

/// The kinds of personal data: the last rules of the table, not looked for in the readings of a
/// text or across fields (`readings.rs`, `across.rs`).
pub(super) const PERSONAL: &[&str] = &["email", "phone", "ip", "home_dir", "id_number"];

/// One rule of the table: what to look for, what to put in its place, and what to report.
pub(super) struct Rule {
    /// Reported to the client in `redactions`, e.g. `github_token`.
    pub(super) kind: &'static str,
    pub(super) placeholder: &'static str,
    pub(super) pattern: &'static str,
    /// Given the whole text and one match, the byte range to replace, or `None` to keep the match
    /// (a version string that looks like an IP, an environment variable reference, …).
    pub(super) span: fn(&str, &Captures<'_>) -> Option<Range<usize>>,
}

/// A secret's value after its name: double-quoted, single-quoted or bare, in named groups so the
/// span functions can tell whether trailing punctuation belongs to it. A bare value ends before
/// an escaped newline, tab or quote (`\n`, `\"` in JSON-escaped text), as it ends before the
/// real one: what follows is the next line, which the decoded view shows as such.
macro_rules! value {
    () => {
        r#"(?:"(?P<dq>[^"\r\n]{1,200})"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>(?:[^\s"'`,;&，。；！？、（）【】「」\\]|\\[^nrt"'])+))"#
    };
}

// `(?-u:\b)` is an ASCII word boundary. It is used throughout instead of `\b` for two reasons: a
// Chinese character next to a secret (`密钥sk-…`, `电话13812345678`) must count as a boundary, and
// the fast DFA engines cannot evaluate a Unicode `\b` on non-ASCII text.
pub(super) const RULES: &[Rule] = &[
    // A whole PEM block, from the BEGIN line found here to its END line found by `pem_block`.
    Rule {
        kind: "private_key",
        placeholder: "[PRIVATE_KEY]",
        pattern: r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----",
        span: pem_block,
    },
    // A PuTTY `.ppk` key file: the private key is the N base64 lines after `Private-Lines: N`.
    Rule {
        kind: "private_key",
        placeholder: "[PRIVATE_KEY]",
        pattern: r"(?-u:\b)Private-Lines:[ \t]*([0-9]{1,4})",
        span: ppk_private_lines,
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
        pattern: r#"(?i)(?-u:\b)bearer[ \t]+["']?([A-Za-z0-9._~+/-]+=*)"#,
        span: bearer_token,
    },
    Rule {
        kind: "basic_auth",
        placeholder: "[CREDENTIALS]",
        pattern: r#"(?i)(?-u:\b)authorization[ \t]*:[ \t]*basic[ \t]+["']?([A-Za-z0-9+/]{6,}={0,2})"#,
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
            r#"|[ \t]-pass(?:in|out)[ \t]+pass:|(?-u:\b)cargo[ \t]+login[ \t]+"#,
            // A key's passphrase: `ssh-keygen -N new -P old`, `zip -P`, `7z -p…`, `keytool -storepass`.
            r#"|(?-u:\b)ssh-keygen(?-u:\b)[^\n|;&]*?[ \t]-[NP][ \t]*|(?-u:\b)(?:zip|unzip|zipcloak)[ \t][^\n|;&]*?-P[ \t]+"#,
            r#"|(?-u:\b)(?:7z|7za|7zz|rar|unrar)[ \t][^\n|;&]*?[ \t]-p"#,
            r#"|(?-u:\b)keytool(?-u:\b)[^\n|;&]*?[ \t]-(?:src|dest)?(?:storepass|keypass)[ \t]+)"#,
            value!(),
        ),
        span: cli_value,
    },
    // The last of several such flags on one command line (`ssh-keygen -p -P old -N new`,
    // `keytool -srcstorepass a -deststorepass b`): the rule above takes the first.
    Rule {
        kind: "cli_password",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"(?:(?-u:\b)ssh-keygen(?-u:\b)[^\n|;&]*[ \t]-[NP][ \t]*"#,
            r#"|(?-u:\b)keytool(?-u:\b)[^\n|;&]*[ \t]-(?:src|dest)?(?:storepass|keypass)[ \t]+)"#,
            value!(),
        ),
        span: cli_value,
    },
    Rule {
        kind: "cli_password",
        placeholder: "[SECRET]",
        pattern: concat!(
            r#"[ \t]-U[ \t]+["']?[^\s%'"]+%(?P<bare>[^\s'"]+)"#,
            r#"|(?-u:\b)echo[ \t]+['"]?[^\s:'"]+:(?P<sq>[^\s'"]+)['"]?[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd"#,
        ),
        span: cli_value,
    },
    // A `.pgpass` line: `host:port:database:user:password`, on a line of its own, as a setting's
    // value or as a quoted string (a JSON value).
    Rule {
        kind: "pgpass",
        placeholder: "[SECRET]",
        pattern: concat!(
            r"(?m)(?:^|[ \t=])[A-Za-z0-9*._-]+:(?:[0-9]{1,5}|\*):[^\s:]+:[^\s:]+:(?P<bare>[^\s]+)[ \t]*$",
            r#"|["'][A-Za-z0-9*._-]+:(?:[0-9]{1,5}|\*):[^\s:"']+:[^\s:"']+:(?P<dq>[^\s"']+)["']"#,
        ),
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
            r#"|(?-u:\b)(?:app ?secret|secret ?key|api ?key|token)[ \t]*(?:是|为|：|设置成|设置为|设成|设为|改成|改为))[ \t]*["'“「『]?"#,
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
    // `~jsmith46/.ssh`: the shell's way to name a user's home directory (round 26, N16).
    Rule {
        kind: "home_dir",
        placeholder: "[REDACTED]",
        pattern: r#"(?m)(?:^|[\s"'`=:(\[{,;])~([A-Za-z_][A-Za-z0-9_.-]{0,31})/"#,
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
