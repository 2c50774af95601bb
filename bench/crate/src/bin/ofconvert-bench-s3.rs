//! An S3 server for `bench/run`: serves a directory through s3s-fs (the server the
//! integration tests run), each subdirectory a bucket and each file an object, on 127.0.0.1
//! at an ephemeral port. Prints its endpoint (`http://127.0.0.1:PORT`) on a line of its own
//! once it listens, then serves until it is killed or its standard input closes.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

/// Serve a directory as an S3 endpoint on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "ofconvert-bench-s3")]
struct Args {
    /// The directory whose subdirectories are the buckets.
    #[arg(value_name = "DIR")]
    root: PathBuf,

    /// The access key clients sign with.
    #[arg(long, default_value = "ofconvert-bench")]
    access_key: String,

    /// The secret key clients sign with.
    #[arg(long, default_value = "ofconvert-bench-secret")]
    secret_key: String,

    /// Threads serving requests.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .context("cannot listen on 127.0.0.1")?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let store = s3s_fs::FileSystem::new(&args.root)
        .map_err(|err| anyhow::anyhow!("cannot serve {}: {err:?}", args.root.display()))?;
    let mut builder = S3ServiceBuilder::new(store);
    builder.set_auth(SimpleAuth::from_single(
        args.access_key.as_str(),
        args.secret_key.as_str(),
    ));
    let service = builder.build();
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            // As S3 itself: a response's last small write leaves at once, not after the
            // client's delayed acknowledgement (40 ms), which would dwarf a ranged read.
            let _ = socket.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let _ = ConnBuilder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{endpoint}")?;
    stdout.flush()?;
    // Serve until whoever started this closes our standard input (or kills us).
    for line in std::io::stdin().lock().lines() {
        line?;
    }
    Ok(())
}
