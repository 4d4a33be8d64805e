#!/usr/bin/env python3
"""Writes redaction_benign.jsonl: ordinary technical texts that strict redaction must leave alone.

Hand-written engineering notes of the kind agents store (hashes, ids, versions, paths, colours,
public keys and certificates, settings that name a secret without giving one, Chinese prose),
plus a few generated values (hashes, a base64 image) from a fixed seed. Rerun with
`python3 make_redaction_benign.py > redaction_benign.jsonl`; the output is deterministic.
"""

import base64
import hashlib
import json
import random
import sys

rng = random.Random(7)


def digest(name, text):
    return hashlib.new(name, text.encode()).hexdigest()


png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(180))).decode()
sha512 = base64.b64encode(hashlib.sha512(b"lodash").digest()).decode()
pubkey = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00 " + bytes(rng.randrange(256) for _ in range(32))).decode()
cert = base64.b64encode(bytes(rng.randrange(256) for _ in range(96))).decode()

texts = [
    # hashes, ids, digests
    f"sha256sum kb.tar.gz -> {digest('sha256', 'kb')}",
    f"md5 of the fixture is {digest('md5', 'fixture')}",
    f"commit {digest('sha1', 'c1')} fixed the flaky test",
    f"git cherry-pick {digest('sha1', 'c2')[:12]}",
    f"docker pull node@sha256:{digest('sha256', 'node')}",
    f'"integrity": "sha512-{sha512}"',
    "request id 550e8400-e29b-41d4-a716-446655440000 timed out",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "experience 01JD3ZQ6V8Y9K2N4P5R7S8T0VW was merged",
    "snowflake id 1859123456789012345 in the logs",
    f"blake3 key {digest('sha256', 'dedup')[:32]} for dedup",
    "ETag: \"33a64df551425fcc55e4d42a148795d9f25f89d4\"",
    "x-request-id: 7f3c2a10-9c1b-4e55-8a2d-3b1f0c9e8d77",
    "AWS region us-east-1, bucket arn:aws:s3:::kb-demo-artifacts",
    "the instance id is i-0abcd1234efgh5678 in subnet-0bb1c79de3EXAMPLE",
    "IAM role arn:aws:iam::123456789012:role/ci-deployer",
    # base64 and data
    f"<img src=\"data:image/png;base64,{png}\">",
    "echo aGVsbG8gd29ybGQ= | base64 -d prints hello world",
    f"ssh-ed25519 {pubkey} alice-laptop",
    f"-----BEGIN CERTIFICATE-----\nMIIB{cert}\n-----END CERTIFICATE-----",
    f"-----BEGIN PUBLIC KEY-----\nMFkw{cert[:64]}\n-----END PUBLIC KEY-----",
    "age public key age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
    # versions, ports, numbers
    "upgrade tokio 1.38.0 -> 1.41.1 and serde 1.0.215",
    "node v20.11.1, npm 10.2.4, pnpm 9.12.3",
    "Python 3.12.7 (main, Oct  1 2024) on linux",
    "pin numpy<2.0 and torch==2.4.1+cu121",
    "listen on 0.0.0.0:8080, health on localhost:9090",
    "timeout 30000 ms, retries 5, backoff 1.5x",
    "the build took 4m12s on 8 cores",
    "HTTP 429 Too Many Requests after 100 req/s",
    "ulimit -n 1048576",
    "chmod 0600 ~/.ssh/id_ed25519 and 0700 ~/.ssh",
    # paths and commands
    "cargo test -p kb-core --test gate_catalogue",
    "/usr/local/lib/python3.12/site-packages/torch/__init__.py",
    "rm -rf node_modules/.cache && pnpm install --frozen-lockfile",
    "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d",
    "kubectl create secret generic db --from-file=password=./db-password.txt",
    "docker login -u kbdemo --password-stdin < ~/.docker-token",
    "mysql -u root -p shop  (it prompts for the password)",
    "psql -h db -U app -W asks for the password",
    "ssh -i ~/.ssh/id_ed25519 -p 2222 deploy@bastion",
    "git push -u origin feature/redaction-catalogue",
    "export PATH=\"$HOME/.cargo/bin:$PATH\"",
    "sudo systemctl restart knowhubd.service",
    "find . -name '*.rs' -newer Cargo.lock -print",
    "tar -xzf kb-0.4.0-x86_64-unknown-linux-gnu.tar.gz -C /opt",
    "openssl rand -hex 32 generates a good SECRET_KEY_BASE",
    "run `rails secret` to generate SECRET_KEY_BASE and put it in the vault",
    "DJANGO_SECRET_KEY must be set from the environment in production",
    "set AWS_SECRET_ACCESS_KEY via aws configure, never in code",
    "sshpass -p is insecure; use ssh keys instead",
    "mysql -p without a value prompts for the password interactively",
    "the .netrc file holds machine, login and password entries",
    "the .pgpass format is hostname:port:database:username:password",
    "store the webhook signing secret in the secret manager",
    "Telegram bot tokens look like <bot id>:<secret>",
    # settings that name a secret without a value
    "password=$DB_PASSWORD and token: ${GITHUB_TOKEN} and api_key=<your key>",
    "token = process.env.GH_TOKEN; password = config.db.password",
    "secretName: my-tls-secret",
    "set max_tokens: 4096 and tokenizer: cl100k_base",
    "token_type: bearer, expires_in: 3600",
    "password_hash column is bcrypt with cost 12",
    "passwordless login via WebAuthn",
    "the reset password link expires after 24 hours",
    "the password is required and must be at least 12 characters",
    "the token is valid for one hour",
    "the API key is sent in the X-API-Key header",
    "Our secret is good tests, not clever code.",
    "tokens per second went from 40 to 55 after the fix",
    "use a Bearer token in the Authorization header",
    "secret rotation runs every 90 days",
    "password: [SECRET] was already redacted",
    "AccountName=kbdemo;EndpointSuffix=core.windows.net",
    "Authorization header missing: 401",
    "login: deploy (key-based, no password)",
    "client_id: 1234-abc.apps.googleusercontent.com",
    # code
    "fn redact(text: &str) -> (Cow<'_, str>, Vec<Redaction>)",
    "const MAX_RETRIES = 5; let backoffMultiplier = 1.5;",
    "if (passwordInput.value.length < 12) showError('too short')",
    "def verify_password(plain: str, hashed: str) -> bool:",
    "class TokenBucketRateLimiterConfigurationBuilderFactory {}",
    "getAuthenticationTokenFromSessionStorageOrRefreshIfExpired()",
    "SELECT id, created_at FROM experiences WHERE status = 'active' LIMIT 10",
    "std::sync::LazyLock<RegexSet> and u8::MAX",
    "matches!(ch, 'a'..='z' | '0'..='9')",
    "let key = blake3::hash(bytes).to_hex();",
    # CSS and UI
    "color: #1e90ff; background: #fafafa; border: 1px solid #e5e7eb",
    "--primary: hsl(221 83% 53%); --radius: 0.5rem",
    "grid-template-columns: repeat(auto-fill, minmax(240px, 1fr))",
    "font-family: 'JetBrains Mono', ui-monospace, monospace",
    # misc English
    "Dan fixed the build on Friday; Alice reviewed it",
    "the migration renamed table tokens to api_tokens",
    "rotate keys: see docs/security.md#key-rotation",
    "use a passphrase-protected key for deploys",
    "schema version 7 adds the redactions column",
    "jwt.io decodes the header eyJhbGciOiJIUzI1NiJ9 as {\"alg\":\"HS256\"}",
    "MSRV 1.88; edition 2024",
    "ISBN 978-3-16-148410-0",
    # Chinese prose
    "修复了搜索结果排序的问题，版本 1.2.3 已发布",
    "密码必须至少包含 12 个字符",
    "密钥轮换每 90 天执行一次",
    "令牌过期后需要重新登录",
    "忘记密码时请点击重置链接",
    "在 CI 中通过环境变量注入密钥，不要写进代码",
    "使用 pnpm 安装依赖后构建成功，耗时 42 秒",
    "数据库连接池大小设置为 20",
    "请把日志级别调到 debug 再复现一次",
    "这个接口返回 429 表示请求过多",
    "部署脚本在 /opt/knowhub/bin 下",
    "口令和密钥都存放在 Vault 中",
    "令牌桶限流算法每秒补充 100 个令牌",
    "密码是否正确由服务端校验",
    "请勿在提交信息里写密码",
    # A second round, first run held out (4 of 30 redacted wrongly), then rules narrowed.
    "KEY_PREFIX=kb2026x is the redis namespace",
    "the primary key is (tenant_id, id)",
    "token budget: 8000 per request",
    "use pass show work/github to read it from pass",
    "auth: oauth2, scopes: repo read:org",
    "API_KEY_HEADER=X-Api-Key",
    "SIG=SIGTERM kill -s $SIG 1234",
    "the secret is to run vacuum weekly",
    "cache key is v2:user:1234:profile",
    "sort key is created_at desc, partition key tenant",
    "mysql -h db -P 3306 -u app -p app_db",
    "Secrets: none needed for local dev",
    "PUBLIC_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO",
    "TOKENIZERS_PARALLELISM=false",
    "session_key: agent:main:cli:01JD3ZQ6V8Y9K2N4P5R7S8T0VW",
    "访问令牌的有效期为 3600 秒",
    "密钥长度为 256 位",
    "密码设置成功后会发送邮件",
    "the GPG key ID is 0x3AA5C34371567BD2",
    "AUTH_MODE=oidc2",
]

for text in texts:
    sys.stdout.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
print(f"{len(texts)} benign texts", file=sys.stderr)
