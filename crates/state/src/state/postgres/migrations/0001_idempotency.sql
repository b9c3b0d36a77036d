-- Idempotency records shared by every host of a fleet (see crates/state/src/state/mod.rs).
CREATE TABLE toolhost_idempotency (
    key text PRIMARY KEY,
    tool text NOT NULL,
    input_digest text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'done')),
    owner text NOT NULL,
    lease_until timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    result text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX toolhost_idempotency_expiry ON toolhost_idempotency (expires_at);
