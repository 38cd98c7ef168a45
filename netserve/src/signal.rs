//! The binaries' shutdown future.

use tokio::io::AsyncReadExt;

/// Completes on SIGINT, on SIGTERM (Unix) or, with `stdin_eof`, when stdin ends or fails (for
/// supervised children whose parent may die without signalling them).
pub async fn shutdown_signal(stdin_eof: bool) {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let eof = async {
        if !stdin_eof {
            return std::future::pending::<()>().await;
        }
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = stdin.read(&mut buf).await {
            tracing::trace!(bytes = n, "ignoring stdin input");
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT; shutting down"),
        () = terminate => tracing::info!("SIGTERM; shutting down"),
        () = eof => tracing::info!("stdin closed; shutting down"),
    }
}
