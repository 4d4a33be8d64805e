//! The hub's schema in PostgreSQL: versioned migrations that `kbctl hub init` applies, and the
//! SQL a team's admin runs to add or remove members.
//!
//! # The invariants the schema enforces, whatever client connects
//!
//! - **Identity from the login**: members hold only SELECT on `knowhub.experiences`; they
//!   share and withdraw through `knowhub.share` and `knowhub.withdraw`, which write as
//!   `session_user` and only that member's own rows. The key is `(team, author, id)`, so no
//!   member can pre-create or touch an id in another's namespace, and none holds the UPDATE
//!   that would let them `LOCK TABLE` it. Row-level security limits reads to the teams listed
//!   for the reader in `knowhub.members`; removing a member's row stops everything they would
//!   read next.
//! - **A commit-ordered sequence no outsider can stall**: every insert or update gets
//!   `hub_seq` from one sequence while holding the lock on its team's row in `knowhub.teams`,
//!   a table no role but the owner can read or lock, so the team's rows become visible in
//!   `hub_seq` order. A puller reading `hub_seq > last` never skips a row that commits later
//!   with a smaller number; `knowhub.last_seq()` bounds what the trigger can have assigned.
//! - **Sizes and values the daemons accept** (CHECK `sane`, for rows written since version 2).
//! - **Wake-ups that tell outsiders nothing**: each committed change notifies its team's own
//!   channel (a random name only members learn, from `knowhub.channel`), with an empty payload;
//!   `knowhub.is_member` answers only for the asking login.

use crate::{Doing, Error, Result};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The role every member is granted; created by the first migration when it does not exist.
pub const MEMBER_ROLE: &str = "knowhub_member";

/// One transaction each, in order; `knowhub.schema_version` says how many ran.
const MIGRATIONS: &[&str] = &[r#"
    DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'knowhub_member') THEN
            CREATE ROLE knowhub_member NOLOGIN;
        END IF;
    END $$;

    CREATE TABLE knowhub.members (
        team   text NOT NULL,
        member name NOT NULL,
        PRIMARY KEY (team, member)
    );

    CREATE SEQUENCE knowhub.change_seq;

    CREATE TABLE knowhub.experiences (
        team         text NOT NULL,
        id           text NOT NULL,
        author       name NOT NULL DEFAULT current_user,
        machine      text NOT NULL,
        submitted_by text,
        agent_id     text,
        task         text NOT NULL,
        resource     text NOT NULL,
        result       text NOT NULL,
        score        smallint NOT NULL CHECK (score BETWEEN 1 AND 5),
        content      text,
        content_type text,
        merge_count  integer NOT NULL DEFAULT 0,
        created_at   timestamptz NOT NULL,
        updated_at   timestamptz NOT NULL,
        deleted      boolean NOT NULL DEFAULT false,
        hub_seq      bigint NOT NULL,
        PRIMARY KEY (team, id)
    );
    CREATE INDEX experiences_team_seq ON knowhub.experiences (team, hub_seq);

    -- Membership, checked by the policies with the definer's rights so that members need no
    -- access to the members table itself.
    CREATE FUNCTION knowhub.is_member(t text, who name) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
        $f$ SELECT EXISTS (SELECT 1 FROM knowhub.members m WHERE m.team = t AND m.member = who) $f$;

    -- Stamps every change with the next number, in commit order per team (see the module
    -- documentation), and keeps a row's author for good.
    CREATE FUNCTION knowhub.stamp() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('knowhub.experiences'), hashtext(NEW.team));
        NEW.hub_seq := nextval('knowhub.change_seq');
        IF TG_OP = 'UPDATE' THEN
            NEW.author := OLD.author;
            NEW.team := OLD.team;
        END IF;
        RETURN NEW;
    END $f$;
    CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON knowhub.experiences
        FOR EACH ROW EXECUTE FUNCTION knowhub.stamp();

    CREATE FUNCTION knowhub.notify() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    BEGIN
        PERFORM pg_notify('knowhub', NEW.team);
        RETURN NULL;
    END $f$;
    CREATE TRIGGER notify AFTER INSERT OR UPDATE ON knowhub.experiences
        FOR EACH ROW EXECUTE FUNCTION knowhub.notify();

    ALTER TABLE knowhub.experiences ENABLE ROW LEVEL SECURITY;
    CREATE POLICY team_reads ON knowhub.experiences FOR SELECT
        USING (knowhub.is_member(team, current_user));
    CREATE POLICY own_inserts ON knowhub.experiences FOR INSERT
        WITH CHECK (author = current_user AND knowhub.is_member(team, current_user));
    CREATE POLICY own_updates ON knowhub.experiences FOR UPDATE
        USING (author = current_user AND knowhub.is_member(team, current_user))
        WITH CHECK (author = current_user);

    REVOKE ALL ON ALL TABLES IN SCHEMA knowhub FROM PUBLIC;
    REVOKE ALL ON ALL FUNCTIONS IN SCHEMA knowhub FROM PUBLIC;
    GRANT USAGE ON SCHEMA knowhub TO knowhub_member;
    GRANT SELECT ON knowhub.schema_version TO knowhub_member;
    GRANT SELECT, INSERT, UPDATE ON knowhub.experiences TO knowhub_member;
    GRANT EXECUTE ON FUNCTION knowhub.is_member(text, name) TO knowhub_member;
"#, r#"
    -- Version 2: a hub no member, no other login and no stray value can break.

    -- Every member writes in a namespace of their own: the key holds the author, so nobody can
    -- pre-create an id another member will push (a confirmation, say).
    ALTER TABLE knowhub.experiences DROP CONSTRAINT experiences_pkey;
    ALTER TABLE knowhub.experiences ADD PRIMARY KEY (team, author, id);

    -- What the daemons would refuse, refused here too (new rows; old ones are read defensively).
    ALTER TABLE knowhub.experiences ADD CONSTRAINT sane CHECK (
        octet_length(id) <= 200 AND octet_length(machine) <= 200
        AND octet_length(task) <= 8000 AND octet_length(resource) <= 8000 AND octet_length(result) <= 32000
        AND coalesce(octet_length(content), 0) <= 4000000
        AND coalesce(octet_length(content_type), 0) <= 1024
        AND coalesce(octet_length(submitted_by), 0) <= 1024 AND coalesce(octet_length(agent_id), 0) <= 1024
        AND merge_count BETWEEN 0 AND 1000000
        AND isfinite(created_at) AND isfinite(updated_at)
    ) NOT VALID;

    -- One row per team: its change lock and its notification channel. Only the definer's
    -- functions touch it, so no other role can take the lock or learn the channel.
    CREATE TABLE knowhub.teams (
        team    text PRIMARY KEY,
        channel text NOT NULL DEFAULT 'knowhub_' || replace(gen_random_uuid()::text, '-', '')
    );
    INSERT INTO knowhub.teams (team)
        SELECT team FROM knowhub.members UNION SELECT team FROM knowhub.experiences
        ON CONFLICT DO NOTHING;

    -- Membership answers only for the asking login itself.
    CREATE OR REPLACE FUNCTION knowhub.is_member(t text, who name) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
        $f$ SELECT who = session_user
                   AND EXISTS (SELECT 1 FROM knowhub.members m WHERE m.team = t AND m.member = who) $f$;

    -- The team's row, made when missing, locked until the transaction ends.
    CREATE FUNCTION knowhub.lock_team(t text) RETURNS text
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    DECLARE found_channel text;
    BEGIN
        SELECT channel INTO found_channel FROM knowhub.teams WHERE team = t FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO knowhub.teams (team) VALUES (t) ON CONFLICT DO NOTHING;
            SELECT channel INTO found_channel FROM knowhub.teams WHERE team = t FOR UPDATE;
        END IF;
        RETURN found_channel;
    END $f$;

    -- Stamps every change with the next number, in commit order per team (the lock on the
    -- team's row is held to the commit), and keeps a row's author and team for good.
    CREATE OR REPLACE FUNCTION knowhub.stamp() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            NEW.author := OLD.author;
            NEW.team := OLD.team;
        END IF;
        PERFORM knowhub.lock_team(NEW.team);
        NEW.hub_seq := nextval('knowhub.change_seq');
        RETURN NEW;
    END $f$;

    -- A wake-up on the team's own channel, with nothing in it.
    CREATE OR REPLACE FUNCTION knowhub.notify() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    BEGIN
        PERFORM pg_notify((SELECT channel FROM knowhub.teams WHERE team = NEW.team), '');
        RETURN NULL;
    END $f$;

    -- The channel of a team the caller is a member of; NULL for any other team.
    CREATE FUNCTION knowhub.channel(t text) RETURNS text
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    BEGIN
        IF NOT knowhub.is_member(t, session_user) THEN
            RETURN NULL;
        END IF;
        INSERT INTO knowhub.teams (team) VALUES (t) ON CONFLICT DO NOTHING;
        RETURN (SELECT channel FROM knowhub.teams WHERE team = t);
    END $f$;

    -- The highest change number handed out: a row above it was not written by the trigger.
    CREATE FUNCTION knowhub.last_seq() RETURNS bigint
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS
        $f$ SELECT last_value FROM knowhub.change_seq $f$;

    -- Sharing and withdrawing, as the logged-in member and only in their own rows. Members
    -- hold no INSERT or UPDATE on the table, so none can lock it.
    CREATE FUNCTION knowhub.share(p_team text, p_id text, p_machine text, p_submitted_by text, p_agent_id text,
            p_task text, p_resource text, p_result text, p_score smallint, p_content text, p_content_type text,
            p_merge_count integer, p_created_ms double precision, p_updated_ms double precision) RETURNS boolean
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    DECLARE me name := session_user;
    BEGIN
        IF NOT knowhub.is_member(p_team, me) THEN
            RAISE EXCEPTION 'role % is not a member of team %', me, p_team USING ERRCODE = '42501';
        END IF;
        INSERT INTO knowhub.experiences AS e (team, id, author, machine, submitted_by, agent_id, task, resource,
                result, score, content, content_type, merge_count, created_at, updated_at, deleted, hub_seq)
            VALUES (p_team, p_id, me, p_machine, p_submitted_by, p_agent_id, p_task, p_resource, p_result, p_score,
                p_content, p_content_type, p_merge_count, to_timestamp(p_created_ms / 1000),
                to_timestamp(p_updated_ms / 1000), false, 0)
            ON CONFLICT (team, author, id) DO UPDATE SET machine = EXCLUDED.machine,
                submitted_by = EXCLUDED.submitted_by, agent_id = EXCLUDED.agent_id, task = EXCLUDED.task,
                resource = EXCLUDED.resource, result = EXCLUDED.result, score = EXCLUDED.score,
                content = EXCLUDED.content, content_type = EXCLUDED.content_type,
                merge_count = EXCLUDED.merge_count, updated_at = EXCLUDED.updated_at, deleted = false
            WHERE (e.machine, e.submitted_by, e.agent_id, e.task, e.resource, e.result, e.score, e.content,
                   e.content_type, e.merge_count, e.deleted)
                IS DISTINCT FROM (EXCLUDED.machine, EXCLUDED.submitted_by, EXCLUDED.agent_id, EXCLUDED.task,
                   EXCLUDED.resource, EXCLUDED.result, EXCLUDED.score, EXCLUDED.content, EXCLUDED.content_type,
                   EXCLUDED.merge_count, false);
        RETURN FOUND;
    END $f$;

    -- A tombstone keeps the id and who wrote it, and nothing of the text.
    CREATE FUNCTION knowhub.withdraw(p_team text, p_id text) RETURNS boolean
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
    DECLARE me name := session_user;
    BEGIN
        IF NOT knowhub.is_member(p_team, me) THEN
            RAISE EXCEPTION 'role % is not a member of team %', me, p_team USING ERRCODE = '42501';
        END IF;
        UPDATE knowhub.experiences SET deleted = true, task = '', resource = '', result = '', content = NULL,
                content_type = NULL, submitted_by = NULL, agent_id = NULL, updated_at = now()
            WHERE team = p_team AND author = me AND id = p_id AND NOT deleted;
        RETURN FOUND;
    END $f$;

    REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON knowhub.experiences FROM knowhub_member;
    REVOKE ALL ON ALL TABLES IN SCHEMA knowhub FROM PUBLIC;
    REVOKE ALL ON ALL SEQUENCES IN SCHEMA knowhub FROM PUBLIC;
    REVOKE ALL ON ALL FUNCTIONS IN SCHEMA knowhub FROM PUBLIC;
    GRANT SELECT ON knowhub.experiences TO knowhub_member;
    GRANT EXECUTE ON FUNCTION knowhub.is_member(text, name), knowhub.channel(text), knowhub.last_seq(),
        knowhub.share(text, text, text, text, text, text, text, text, smallint, text, text, integer,
                      double precision, double precision),
        knowhub.withdraw(text, text) TO knowhub_member;
"#];

/// Creates the `knowhub` schema or brings it up to [`SCHEMA_VERSION`], one transaction per
/// migration, under an advisory lock so that two admins running it at once do not collide.
/// Returns the versions before and after.
pub fn migrate(client: &mut postgres::Client) -> Result<(i32, i32)> {
    migrate_to(client, SCHEMA_VERSION)
}

/// [`migrate`], up to `target` only: for tests of the upgrade from an older hub.
pub fn migrate_to(client: &mut postgres::Client, target: i32) -> Result<(i32, i32)> {
    let mut tx = client.transaction().doing("starting the migration")?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('knowhub.migrate'))", &[]).doing("locking the migration")?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS knowhub; \
         CREATE TABLE IF NOT EXISTS knowhub.schema_version (version integer NOT NULL); \
         INSERT INTO knowhub.schema_version SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM knowhub.schema_version);",
    )
    .doing("creating the knowhub schema (the admin's role needs CREATE on the database)")?;
    let found: i32 =
        tx.query_one("SELECT version FROM knowhub.schema_version", &[]).doing("reading the schema version")?.get(0);
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew { found, known: SCHEMA_VERSION });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().take(target.max(0) as usize).skip(found as usize) {
        tx.batch_execute(sql).doing("applying a hub migration")?;
        tx.execute("UPDATE knowhub.schema_version SET version = $1", &[&(index as i32 + 1)])
            .doing("recording the schema version")?;
    }
    tx.commit().doing("committing the migration")?;
    Ok((found, target.clamp(found, SCHEMA_VERSION)))
}

/// The schema version the hub holds; an error naming `kbctl hub init` when there is none.
pub fn version(client: &mut postgres::Client, target: &str) -> Result<i32> {
    let row = client
        .query_opt("SELECT to_regclass('knowhub.schema_version') IS NOT NULL", &[])
        .doing("looking for the knowhub schema")?;
    if !row.is_some_and(|row| row.get::<_, bool>(0)) {
        return Err(Error::NoSchema { target: target.to_owned() });
    }
    let found: i32 =
        client.query_one("SELECT version FROM knowhub.schema_version", &[]).doing("reading the schema version")?.get(0);
    match found {
        0 => Err(Error::NoSchema { target: target.to_owned() }),
        found if found > SCHEMA_VERSION => Err(Error::SchemaTooNew { found, known: SCHEMA_VERSION }),
        found => Ok(found),
    }
}

/// The SQL a team's admin runs to add a member (a login role of their own, granted
/// [`MEMBER_ROLE`], listed in the team), and to remove one.
pub fn member_sql(team: &str, member: &str) -> String {
    let role = quote_ident(member);
    let team = quote_literal(team);
    let name = quote_literal(member);
    format!(
        "-- add {member} to the team (choose the password; give it to them for password_file):\n\
         CREATE ROLE {role} LOGIN PASSWORD 'change-me';\n\
         GRANT {MEMBER_ROLE} TO {role};\n\
         INSERT INTO knowhub.members (team, member) VALUES ({team}, {name});\n\
         INSERT INTO knowhub.teams (team) VALUES ({team}) ON CONFLICT DO NOTHING;\n\
         -- remove them again (they keep what they pulled; they receive nothing new):\n\
         -- DELETE FROM knowhub.members WHERE team = {team} AND member = {name};\n"
    )
}

pub fn quote_ident(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_sql_quotes_names() {
        let sql = member_sql("o'brien team", "Bob \"the\" builder");
        assert!(sql.contains("CREATE ROLE \"Bob \"\"the\"\" builder\" LOGIN"), "{sql}");
        assert!(sql.contains("VALUES ('o''brien team', 'Bob \"the\" builder')"), "{sql}");
    }
}
