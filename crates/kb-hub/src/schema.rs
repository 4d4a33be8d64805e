//! The hub's schema in PostgreSQL: versioned migrations that `kbctl hub init` applies, and the
//! SQL a team's admin runs to add or remove members.
//!
//! # The invariants the schema enforces, whatever client connects
//!
//! - **Row-level security**: a member reads the rows of the teams listed for them in
//!   `knowhub.members` and inserts or updates only rows whose `author` is their own role;
//!   nobody but the owner deletes (a delete is a tombstone: `deleted` set, text emptied).
//!   Removing a member's row from `knowhub.members` stops everything they would read next.
//! - **A commit-ordered sequence**: every insert or update of a row gets `hub_seq` from one
//!   sequence while holding a per-team transaction-scoped advisory lock, so the team's rows
//!   become visible in `hub_seq` order. A puller reading `hub_seq > last` never skips a row
//!   that commits later with a smaller number.
//! - **Wake-ups**: each committed change notifies channel `knowhub` with the team's name.

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
"#];

/// Creates the `knowhub` schema or brings it up to [`SCHEMA_VERSION`], one transaction per
/// migration, under an advisory lock so that two admins running it at once do not collide.
/// Returns the versions before and after.
pub fn migrate(client: &mut postgres::Client) -> Result<(i32, i32)> {
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
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(sql).doing("applying a hub migration")?;
        tx.execute("UPDATE knowhub.schema_version SET version = $1", &[&(index as i32 + 1)])
            .doing("recording the schema version")?;
    }
    tx.commit().doing("committing the migration")?;
    Ok((found, SCHEMA_VERSION))
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
