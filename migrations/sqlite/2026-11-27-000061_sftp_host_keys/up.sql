-- The SFTP server's host keys (OpenSSH private-key text), one per algorithm: made by the first
-- node that starts the server and read by every other, so that all nodes of a cluster answer
-- with the same host key and clients' known_hosts entries stay valid whichever node they reach.
CREATE TABLE sftp_host_keys (
    algorithm TEXT PRIMARY KEY,
    private_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
