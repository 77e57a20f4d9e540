//! `pflow-host mcp serve`: the agent-facing tools (see [`tools`]) as an MCP server, over stdio
//! or Streamable HTTP.
//!
//! Each tool call runs on a blocking thread with its own cancel token. The token is cancelled
//! when the client cancels the call, when the client goes away (stdin closes, the HTTP session
//! ends), and on Ctrl-C or SIGTERM; a cancelled run stops its node and kills every process it
//! started, and the server waits for that before it exits.

mod tools;

use clap::Args;
use pflow_runtime::{CancelToken, Host};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tools::Outcome;

#[derive(Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at this address (`PORT` or `IP:PORT`; the IP defaults to
    /// 127.0.0.1) instead of stdio. The endpoint is `http://ADDR/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Let --http bind an address other than loopback. Anyone who can reach it can run
    /// workflows as you.
    #[arg(long, requires = "http")]
    allow_remote: bool,
}

#[derive(Clone)]
pub struct PflowServer {
    host: Arc<Host>,
    /// Cancelled when the server stops: every call still running is cancelled with it.
    shutdown: CancellationToken,
    allow_live: bool,
}

impl ServerHandler for PflowServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pflow-host", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Build, validate and run pflow workflows with every node sandboxed. Start with \
                 the guide tool (topic core); look for a saved workflow with workflow_find \
                 before building one; probe nodes and run workflows dry until they work.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::definitions(
            self.allow_live,
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = tools::find(&request.name) else {
            let names: Vec<&str> = tools::TOOLS.iter().map(|t| t.name).collect();
            return Err(McpError::invalid_params(
                format!(
                    "no tool named '{}'; the tools are {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        let cancel = CancelToken::new();
        // The call's future is dropped when rmcp gives up on it: the run stops then too.
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
        let host = self.host.clone();
        let allow_live = self.allow_live;
        let run_cancel = cancel.clone();
        let mut running = tokio::task::spawn_blocking(move || {
            let mut progress = |done: u32, total: Option<u32>, message: String| {
                let _ = progress_tx.send((done, total, message));
            };
            let mut call = tools::Call {
                host: &host,
                arguments: &arguments,
                cancel: &run_cancel,
                allow_live,
                progress: &mut progress,
            };
            (tool.run)(&mut call).unwrap_or_else(|outcome| outcome)
        });
        let progress_token = context.meta.get_progress_token();
        let outcome = loop {
            tokio::select! {
                finished = &mut running => break finished,
                Some((done, total, message)) = progress_rx.recv() => {
                    if let Some(token) = &progress_token {
                        let mut param = ProgressNotificationParam::new(token.clone(), done.into())
                            .with_message(message);
                        param.total = total.map(f64::from);
                        // A client that stopped listening gets no progress; the call goes on.
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                _ = context.ct.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                _ = self.shutdown.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
            }
        };
        let result = match outcome {
            Ok(Outcome::Done(value)) => CallToolResult::structured(value),
            Ok(Outcome::Text(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(Outcome::Failed(error)) => CallToolResult::structured_error(error),
            Err(panic) => CallToolResult::structured_error(serde_json::json!({
                "source": "host", "category": "internal", "fixable": false,
                "message": format!("the tool failed unexpectedly: {panic}"),
            })),
        };
        Ok(result.into())
    }
}

struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Serves until the client goes away (stdio), or until Ctrl-C or SIGTERM.
pub fn serve(host: Host, args: ServeArgs) -> anyhow::Result<u8> {
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    crate::signals::on_interrupt(move || on_signal.cancel());
    let server = PflowServer {
        allow_live: host.settings.mcp_serve.allow_live,
        host: Arc::new(host),
        shutdown: shutdown.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = runtime.block_on(async {
        match &args.http {
            Some(addr) => serve_http(server, addr, args.allow_remote).await,
            None => serve_stdio(server).await,
        }
    });
    // Calls still running stop now; dropping the runtime waits for their threads, so every
    // process they started is dead before the server exits.
    shutdown.cancel();
    drop(runtime);
    served.map(|()| 0)
}

async fn serve_stdio(server: PflowServer) -> anyhow::Result<()> {
    let shutdown = server.shutdown.clone();
    let stdin = CancelAtEof {
        inner: tokio::io::stdin(),
        on_eof: shutdown.clone(),
    };
    let service = server.serve((stdin, tokio::io::stdout())).await?;
    let cancel_service = service.cancellation_token();
    tokio::select! {
        quit = service.waiting() => { quit?; }
        _ = shutdown.cancelled() => cancel_service.cancel(),
    }
    Ok(())
}

/// Standard input that cancels `on_eof` when it ends: a client that closes it (or dies) is gone,
/// and its calls stop at once, rather than after rmcp's few seconds of draining responses.
struct CancelAtEof<R> {
    inner: R,
    on_eof: CancellationToken,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for CancelAtEof<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let at_eof = buf.remaining() > 0 && buf.filled().len() == before;
        if matches!(polled, std::task::Poll::Ready(Ok(()))) && at_eof {
            self.on_eof.cancel();
        }
        polled
    }
}

async fn serve_http(server: PflowServer, addr: &str, allow_remote: bool) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let addr = listen_address(addr)?;
    if !addr.ip().is_loopback() && !allow_remote {
        anyhow::bail!(
            "{addr} is not a loopback address: anyone who can reach it could run workflows as you. Add --allow-remote to bind it anyway"
        );
    }
    let shutdown = server.shutdown.clone();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    if !addr.ip().is_loopback() {
        // Requests name this machine by whatever name reaches it.
        config = config.disable_allowed_hosts();
        eprintln!("warning: serving on {addr}: anyone who can reach it can run workflows as you");
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    eprintln!(
        "pflow-host mcp serve: http://{}/mcp",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!("cannot accept a connection: {error}");
                    continue;
                }
            },
            _ = shutdown.cancelled() => return Ok(()),
        };
        let service = service.clone();
        let handle = hyper::service::service_fn(move |request| {
            let service = service.clone();
            async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
        });
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handle);
            if let Err(error) = connection.await {
                tracing::debug!("MCP HTTP connection ended: {error}");
            }
        });
    }
}

/// `PORT`, `IP:PORT` or `[IPv6]:PORT`; a bare port is on 127.0.0.1.
fn listen_address(given: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(port) = given.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    given.parse().map_err(|_| {
        anyhow::anyhow!("'{given}' is not an address: give PORT or IP:PORT, e.g. 127.0.0.1:8765")
    })
}

#[cfg(test)]
mod tests {
    use super::listen_address;

    #[test]
    fn a_bare_port_is_on_loopback() {
        let addr = listen_address("8765").unwrap();
        assert!(addr.ip().is_loopback());
        assert_eq!(addr.port(), 8765);
        assert!(listen_address("0.0.0.0:1").is_ok_and(|a| !a.ip().is_loopback()));
        assert!(listen_address("localhost:x").is_err());
    }
}
