-- Coffer platform schema: accounts, OAuth clients and grants, devices, locations, settings, events.
-- Times are Unix seconds (BIGINT) so that both backends share one schema. On SQLite the tables
-- keyed by a hash are WITHOUT ROWID: the key is the table's only b-tree, which halves the pages
-- an insert writes.

CREATE TABLE profiles (
    id BIGINT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    sftp_enabled BOOLEAN NOT NULL,
    collaboration_enabled BOOLEAN NOT NULL,
    mail_enabled BOOLEAN NOT NULL
);
INSERT INTO profiles (id, name, sftp_enabled, collaboration_enabled, mail_enabled) VALUES
    (1, 'Standard', TRUE, TRUE, TRUE),
    (2, 'Restricted', FALSE, FALSE, TRUE);

CREATE TABLE roles (
    name TEXT PRIMARY KEY,
    admin_rank INTEGER NOT NULL,
    sftp_enabled BOOLEAN NOT NULL
);
INSERT INTO roles (name, admin_rank, sftp_enabled) VALUES
    ('user', 0, TRUE),
    ('helpdesk-admin', 1, TRUE),
    ('application-admin', 2, TRUE),
    ('system-admin', 3, TRUE);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    password_hash TEXT,
    role TEXT NOT NULL REFERENCES roles(name),
    profile_id BIGINT NOT NULL REFERENCES profiles(id),
    active BOOLEAN NOT NULL DEFAULT TRUE,
    deleted BOOLEAN NOT NULL DEFAULT FALSE,
    internal BOOLEAN NOT NULL DEFAULT TRUE,
    force_password_change BOOLEAN NOT NULL DEFAULT FALSE,
    mobile_number TEXT,
    mobile_verified BOOLEAN NOT NULL DEFAULT FALSE,
    language_id BIGINT,
    location_id BIGINT,
    basedir_id TEXT NOT NULL,
    mydir_id TEXT NOT NULL,
    syncdir_id TEXT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE system_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE clients (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    flag INTEGER NOT NULL,
    flow INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    access_token_lifetime INTEGER NOT NULL,
    refresh_token_lifetime INTEGER NOT NULL,
    signature_key TEXT,
    jwt_public_key TEXT,
    touch_id BOOLEAN NOT NULL DEFAULT FALSE,
    min_version INTEGER NOT NULL DEFAULT 0,
    ask_pin INTEGER NOT NULL DEFAULT 0,
    pin_timeout INTEGER NOT NULL DEFAULT 0,
    max_pin_attempts INTEGER NOT NULL DEFAULT 0,
    builtin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    install_tag_id TEXT NOT NULL,
    install_name TEXT NOT NULL,
    wipe_flag INTEGER NOT NULL DEFAULT 0,
    mobile_key_store TEXT,
    registration_token TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (user_id, client_id, install_tag_id)
);
CREATE INDEX devices_install_tag ON devices(install_tag_id);

CREATE TABLE locations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    dns TEXT NOT NULL,
    tenant_id BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL
);

-- The outbox: every state change records its event in the same transaction.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    actor_id TEXT,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE authorization_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    code_challenge TEXT,
    family_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
CREATE INDEX authorization_codes_expires ON authorization_codes(expires_at);

CREATE TABLE access_tokens (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    expires_at BIGINT,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
CREATE INDEX access_tokens_family ON access_tokens(family_id);
CREATE INDEX access_tokens_user ON access_tokens(user_id);

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    expires_at BIGINT,
    used_at BIGINT,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

CREATE TABLE used_assertions (
    client_id TEXT NOT NULL,
    jti TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti)
) WITHOUT ROWID;

CREATE TABLE used_signature_codes (
    code_hash TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
) WITHOUT ROWID;

CREATE TABLE authorize_requests (
    ticket_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    state TEXT,
    code_challenge TEXT,
    mobile BOOLEAN NOT NULL,
    expires_at BIGINT NOT NULL
) WITHOUT ROWID;

CREATE TABLE scim_tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
);
