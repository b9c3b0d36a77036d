//! The MCP server handler: initialize, tools/list and tools/call over the
//! plan's tools, each call through the shared pipeline by way of the
//! [`adapter`](super::adapter).

use std::borrow::Cow;
use std::sync::Arc;

#[allow(deprecated)] // see `impl ServerHandler`
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig,
    SubscriptionFilter,
};
use rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, UpdateTaskParams};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::adapter::{self, http_principal, http_toolset};
use super::cache_hints;
use super::http::sessions::SessionCalls;
use crate::cancel::CancelToken;
use crate::pipeline::Pipeline;

/// Serves one plan's tools. Cheap to clone: the HTTP transport makes one
/// per session, all sharing the pipeline (one audit log, one set of
/// per-process limits).
#[derive(Clone)]
pub struct ToolhostServer {
    pipeline: Arc<Pipeline>,
    gone: CancelToken,
    /// Clients told when the tool list changes.
    subscribers: super::tools_changed::Subscribers,
    /// HTTP: each session's cancel token (fired when the session ends).
    session_calls: Option<Arc<SessionCalls>>,
    /// MCP tasks: the store and this host's running tasks.
    tasks: Arc<super::tasks::Tasks>,
}

impl ToolhostServer {
    /// A server over `pipeline`. `gone` fires when the client is gone (stdin
    /// closed, session ended): every call in flight is then cancelled.
    pub fn new(pipeline: Arc<Pipeline>, gone: CancelToken) -> Self {
        ToolhostServer {
            subscribers: super::tools_changed::Subscribers::watch(pipeline.host()),
            tasks: super::tasks::Tasks::open(pipeline.clone()),
            pipeline,
            gone,
            session_calls: None,
        }
    }

    /// The same server, its calls cancelled when their HTTP session ends.
    pub fn with_session_calls(mut self, calls: Arc<SessionCalls>) -> Self {
        self.session_calls = Some(calls);
        self
    }

    /// Who a request's tasks belong to: its HTTP principal, else the
    /// host's (stdio).
    fn owner<'c>(&'c self, context: &'c RequestContext<RoleServer>) -> &'c str {
        http_principal(context).unwrap_or(&self.pipeline.host().plan.governance.host_principal)
    }

    /// The same server for another client connection.
    pub fn for_connection(&self, gone: CancelToken) -> Self {
        ToolhostServer {
            pipeline: self.pipeline.clone(),
            subscribers: self.subscribers.clone(),
            gone,
            session_calls: self.session_calls.clone(),
            tasks: self.tasks.clone(),
        }
    }
}

// Logging is deprecated from 2026-07-28 on (SEP-2577), yet part of every
// earlier revision served: `logging/setLevel` must still be answered.
#[allow(deprecated)]
impl ServerHandler for ToolhostServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_logging()
                .enable_tasks()
                .build(),
        );
        let mut implementation = Implementation::new("toolhost", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("toolhost".into());
        implementation.description =
            Some("Tools from a toolhost mount plan, run under its policy and audit.".into());
        info.server_info = implementation;
        info
    }

    /// Up to [`adapter::NEWEST_PROTOCOL`].
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        adapter::protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        tracing::info!(
            client = %request.client_info.name,
            client_version = %request.client_info.version,
            protocol = %request.protocol_version,
            elicitation = request.capabilities.elicitation.is_some(),
            "MCP client connected"
        );
        context.peer.set_peer_info(request.clone());
        self.subscribers.add(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Read from the registry each time: a mounted MCP server's
        // `tools/list_changed` changes it while the session lives.
        // `convert::tools` adds alias profiles when `[host] list_aliases`.
        // With grants in the plan, a principal sees only what it may call.
        // A toolset (the server's, the client's `?toolset=`), pins and
        // `[host] tool_discovery` narrow it further (see crate::surface).
        let principal = http_principal(&context);
        let tools = self
            .pipeline
            .list_tools(principal, http_toolset(&context).as_deref())
            .map_err(|refused| {
                let message = refused.error.map(|e| e.message).unwrap_or_default();
                ErrorData::invalid_params(message, None)
            })?;
        let mut listed = ListToolsResult::with_all_items(tools);
        if adapter::is_stateless(&context) {
            cache_hints::tools(self.pipeline.host(), &mut listed);
        }
        Ok(listed)
    }

    /// Accepted at any level: the server sends no log notifications (its
    /// logs go to stderr), so every level a client asks for is kept.
    /// Clients on 2026-07-28 name a level per request instead.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(level = ?request.level, "MCP client set its log level");
        Ok(())
    }

    /// Reads a kept over-limit output (`toolhost://output/<id>`, with
    /// `?offset=N&length=M`), for the principal that produced it.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let plan = &self.pipeline.host().plan;
        let principal = http_principal(&context).unwrap_or(&plan.governance.host_principal);
        let (offset, length) = crate::surface::outputs::range_of(&request.uri);
        let outputs = &self.pipeline.surface().outputs;
        match outputs.read(principal, &request.uri, offset, length) {
            Ok(chunk) => {
                let mut meta = rmcp::model::MetaObject::new();
                meta.0.insert(
                    "toolhost".into(),
                    serde_json::json!({ "offset": chunk.offset, "total": chunk.total, "next_offset": chunk.next_offset }),
                );
                let contents = ResourceContents::TextResourceContents {
                    uri: request.uri,
                    mime_type: Some("text/plain".into()),
                    text: chunk.text,
                    meta: Some(meta),
                };
                Ok(ReadResourceResult::new(vec![contents]).into())
            }
            Err(e) => Err(ErrorData::resource_not_found(
                e.to_string(),
                Some(serde_json::json!({ "code": e.code(), "uri": request.uri })),
            )),
        }
    }

    /// 2026-07-28 clients hear of tool list changes by listening: only the
    /// tool list changes here (kept outputs never change; there are no
    /// prompts), so that is all a listener is given.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// Tells the listener of every change to the tool list until it cancels
    /// (or its stream closes, which cancels it). Changes that arrive while a
    /// notification is being sent fold into one: the client lists anew.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.subscribers.changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!("a tool list listener is gone: {e}");
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let runner = adapter::Runner {
            pipeline: &self.pipeline,
            gone: &self.gone,
            session_calls: self.session_calls.as_deref(),
            tasks: Some(&self.tasks),
        };
        runner.call_tool(request, &context).await
    }

    // MCP tasks (see super::tasks): rmcp answers these only for clients
    // that declared the extension on the request.

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id, self.owner(&context)).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&request.task_id, self.owner(&context)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id, self.owner(&context)).await
    }
}
