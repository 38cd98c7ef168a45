-- gantry-admin schema: one file for SQLite and PostgreSQL, both run through sqlx's Any driver.
--
-- Portable types only. Booleans are INTEGER 0/1 (as in ShenYu's own schemas): sqlx's Any
-- driver cannot read a SQLite BOOLEAN column. Dates are ShenYu's `yyyy-MM-dd HH:mm:ss` text.
-- Conditions, auth params and auth paths are JSON text. SQLite enforces the foreign keys
-- because sqlx turns `PRAGMA foreign_keys` on for every connection.

CREATE TABLE plugin (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    sort         INTEGER NOT NULL,
    enabled      INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    config       TEXT,
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL
);

-- The fields a plugin's selector (type 1), rule (type 2) or plugin (type 3) handle has, for
-- the dashboard's forms. data_type: 1 number, 2 string, 3 select (options from a dictionary).
-- ext_obj: JSON text such as {"required":"1","defaultValue":"50"}.
CREATE TABLE plugin_handle (
    id           TEXT PRIMARY KEY NOT NULL,
    plugin_id    TEXT NOT NULL REFERENCES plugin (id) ON DELETE CASCADE,
    field        TEXT NOT NULL,
    label        TEXT NOT NULL,
    data_type    INTEGER NOT NULL,
    type         INTEGER NOT NULL,
    sort         INTEGER NOT NULL,
    ext_obj      TEXT,
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL,
    UNIQUE (plugin_id, field, type)
);

CREATE TABLE selector (
    id            TEXT PRIMARY KEY NOT NULL,
    plugin_id     TEXT NOT NULL REFERENCES plugin (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    selector_type INTEGER NOT NULL,
    match_mode    INTEGER NOT NULL,
    sort          INTEGER NOT NULL,
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    loged         INTEGER NOT NULL CHECK (loged IN (0, 1)),
    continued     INTEGER NOT NULL CHECK (continued IN (0, 1)),
    match_restful INTEGER NOT NULL CHECK (match_restful IN (0, 1)),
    handle        TEXT,
    conditions    TEXT NOT NULL,
    date_created  TEXT NOT NULL,
    date_updated  TEXT NOT NULL
);

CREATE TABLE rule (
    id            TEXT PRIMARY KEY NOT NULL,
    selector_id   TEXT NOT NULL REFERENCES selector (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    match_mode    INTEGER NOT NULL,
    sort          INTEGER NOT NULL,
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    loged         INTEGER NOT NULL CHECK (loged IN (0, 1)),
    match_restful INTEGER NOT NULL CHECK (match_restful IN (0, 1)),
    handle        TEXT,
    conditions    TEXT NOT NULL,
    date_created  TEXT NOT NULL,
    date_updated  TEXT NOT NULL
);

CREATE INDEX rule_selector_id ON rule (selector_id);

CREATE TABLE meta_data (
    id              TEXT PRIMARY KEY NOT NULL,
    app_name        TEXT,
    context_path    TEXT,
    path            TEXT NOT NULL UNIQUE,
    path_desc       TEXT,
    rpc_type        TEXT,
    service_name    TEXT,
    method_name     TEXT,
    parameter_types TEXT,
    rpc_ext         TEXT,
    rule_name       TEXT,
    enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    date_created    TEXT NOT NULL,
    date_updated    TEXT NOT NULL
);

CREATE TABLE app_auth (
    id           TEXT PRIMARY KEY NOT NULL,
    app_key      TEXT NOT NULL UNIQUE,
    app_secret   TEXT NOT NULL,
    user_id      TEXT,
    phone        TEXT,
    ext_info     TEXT,
    open         INTEGER NOT NULL CHECK (open IN (0, 1)),
    enabled      INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    params       TEXT NOT NULL,
    paths        TEXT NOT NULL,
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL
);

-- Dashboard users. password is an Argon2id PHC hash, never the clear password. role: 1 admin.
CREATE TABLE dashboard_user (
    id           TEXT PRIMARY KEY NOT NULL,
    user_name    TEXT NOT NULL UNIQUE,
    password     TEXT NOT NULL,
    role         INTEGER NOT NULL,
    enabled      INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL
);
