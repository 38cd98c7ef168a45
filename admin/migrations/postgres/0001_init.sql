-- gantry-admin schema for PostgreSQL: the SQLite schema after all its migrations. Conditions,
-- auth params and auth paths are JSON text; dates are ShenYu's `yyyy-MM-dd HH:mm:ss` text.
CREATE TABLE plugin (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    sort         INTEGER NOT NULL,
    enabled      BOOLEAN NOT NULL,
    config       TEXT,
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL
);

CREATE TABLE selector (
    id            TEXT PRIMARY KEY NOT NULL,
    plugin_id     TEXT NOT NULL REFERENCES plugin (id),
    name          TEXT NOT NULL,
    selector_type INTEGER NOT NULL,
    match_mode    INTEGER NOT NULL,
    sort          INTEGER NOT NULL,
    enabled       BOOLEAN NOT NULL,
    loged         BOOLEAN NOT NULL,
    continued     BOOLEAN NOT NULL,
    match_restful BOOLEAN NOT NULL,
    handle        TEXT,
    conditions    TEXT NOT NULL,
    date_created  TEXT NOT NULL,
    date_updated  TEXT NOT NULL
);

CREATE TABLE rule (
    id            TEXT PRIMARY KEY NOT NULL,
    selector_id   TEXT NOT NULL REFERENCES selector (id),
    name          TEXT NOT NULL,
    match_mode    INTEGER NOT NULL,
    sort          INTEGER NOT NULL,
    enabled       BOOLEAN NOT NULL,
    loged         BOOLEAN NOT NULL,
    match_restful BOOLEAN NOT NULL,
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
    enabled         BOOLEAN NOT NULL,
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
    open         BOOLEAN NOT NULL,
    enabled      BOOLEAN NOT NULL,
    params       TEXT NOT NULL,
    paths        TEXT NOT NULL,
    date_created TEXT NOT NULL,
    date_updated TEXT NOT NULL
);
