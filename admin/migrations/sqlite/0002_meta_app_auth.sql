-- Metadata gains ShenYu's descriptive columns and timestamps; app auth gains an id, its owner's
-- details, and its params and paths (JSON text: lists of AuthParamData / AuthPathData).
ALTER TABLE meta_data ADD COLUMN path_desc TEXT;
ALTER TABLE meta_data ADD COLUMN rule_name TEXT;
ALTER TABLE meta_data ADD COLUMN date_created TEXT NOT NULL DEFAULT '';
ALTER TABLE meta_data ADD COLUMN date_updated TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX meta_data_path ON meta_data (path);

CREATE TABLE app_auth_v2 (
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
INSERT INTO app_auth_v2 (id, app_key, app_secret, open, enabled, params, paths, date_created,
                         date_updated)
    SELECT app_key, app_key, app_secret, open, enabled, '[]', '[]', '', '' FROM app_auth;
DROP TABLE app_auth;
ALTER TABLE app_auth_v2 RENAME TO app_auth;
