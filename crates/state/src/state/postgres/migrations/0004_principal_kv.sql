-- State a module keeps for an owner (a principal) across the hosts of a
-- fleet: read-before-write records, undo history. Scoped by the host to
-- (owner, module mount); bounded by the host (value size, keys per owner
-- and scope) and expiring.
CREATE TABLE toolhost_principal_kv (
    owner text NOT NULL,
    scope text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    written_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (owner, scope, key)
);
CREATE INDEX toolhost_principal_kv_expiry ON toolhost_principal_kv (expires_at);
CREATE INDEX toolhost_principal_kv_written ON toolhost_principal_kv (owner, scope, written_at);
