-- Audit records, one hash chain per host: the host's lines in order of seq.
CREATE TABLE toolhost_audit (
    host_id text NOT NULL,
    seq bigint NOT NULL,
    line text NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host_id, seq)
);
