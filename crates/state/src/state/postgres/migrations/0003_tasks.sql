-- MCP tasks shared by every host of a fleet (see crates/state/src/state/tasks.rs).
-- Times are milliseconds since the epoch on the database's clock.
CREATE TABLE toolhost_tasks (
    task_id text PRIMARY KEY,
    owner text NOT NULL,
    host_id text NOT NULL,
    tool text NOT NULL,
    status text NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    status_message text,
    cancel_requested boolean NOT NULL DEFAULT false,
    payload text,
    created_ms bigint NOT NULL,
    updated_ms bigint NOT NULL,
    lease_until_ms bigint NOT NULL,
    expires_ms bigint NOT NULL
);
CREATE INDEX toolhost_tasks_owner ON toolhost_tasks (owner, created_ms);
CREATE INDEX toolhost_tasks_host ON toolhost_tasks (host_id, status);
CREATE INDEX toolhost_tasks_expiry ON toolhost_tasks (expires_ms);
