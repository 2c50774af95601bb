//! `man`: the manual pages, the program's (`ofconvert(1)`) and one per command
//! (`ofconvert-tf2of(1)`, ...), each with its flags, the exit statuses and the environment
//! variables it reads, rendered from the command line itself by clap_mangen.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};
use crate::exit_codes::ExitCode;
use crate::UsageError;

/// The exit statuses, as every page lists them.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "All good."),
    (
        "1",
        "Some input failed (the rest was done), an inspection found problems, or diff found a \
         difference.",
    ),
    (
        "2",
        "A usage error: a bad flag, a path that does not exist, an output in the way or held \
         by another run; for diff, the two could not be compared.",
    ),
    (
        "130",
        "Interrupted by SIGINT or SIGTERM: what was finished is kept, --resume finishes.",
    ),
];

/// The environment variables, for the pages of commands that reach stores.
const STORES: &[(&str, &str)] = &[
    (
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION",
        "S3 credentials and region (AWS profiles are not read).",
    ),
    (
        "AWS_ENDPOINT_URL, AWS_ALLOW_HTTP",
        "Another S3 endpoint (MinIO, Ceph, ...); true to allow a plain http:// one.",
    ),
    (
        "AWS_CA_BUNDLE, SSL_CERT_FILE, SSL_CERT_DIR",
        "Certificates of a private CA to trust (AWS_CA_BUNDLE for S3 only).",
    ),
    (
        "AWS_SKIP_SIGNATURE, GOOGLE_SKIP_SIGNATURE",
        "true to read a public bucket without credentials (as --anonymous).",
    ),
    (
        "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT",
        "GCS credentials.",
    ),
    (
        "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY",
        "Azure Blob Storage credentials.",
    ),
];

/// What the terminal output reads, for every page.
const TERMINAL: &[(&str, &str)] = &[
    ("NO_COLOR", "Set, no colour in errors and warnings."),
    (
        "CLICOLOR_FORCE",
        "Set, colour even where stderr is no terminal.",
    ),
];

/// The built command line: each subcommand knows its page's name (`ofconvert-tf2of`).
fn command_line() -> clap::Command {
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    cli
}

/// Renders `command`'s page, with the sections clap_mangen does not write.
fn page(command: &clap::Command, stores: bool, out: &mut dyn Write) -> io::Result<()> {
    clap_mangen::Man::new(command.clone()).render(out)?;
    let mut roff = String::new();
    let mut section = |title: &str, items: &[(&str, &str)]| {
        roff.push_str(&format!(".SH \"{title}\"\n"));
        for (name, what) in items {
            roff.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                escape(name),
                escape(what)
            ));
        }
    };
    section("EXIT STATUS", EXIT_STATUS);
    let mut environment = TERMINAL.to_vec();
    if stores {
        environment.extend_from_slice(STORES);
    }
    section("ENVIRONMENT", &environment);
    out.write_all(roff.as_bytes())
}

/// Text for roff: a leading dot or quote would be a request, a backslash an escape.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    match text.chars().next() {
        Some('.' | '\'') => format!("\\&{text}"),
        _ => text,
    }
}

/// Whether a command reads or writes stores: its page lists their variables.
fn reaches_stores(command: &clap::Command) -> bool {
    command.get_arguments().any(|arg| arg.get_id() == "retries")
}

/// Every page: the program's, then one per command, with their file names.
fn pages() -> Vec<(String, clap::Command, bool)> {
    let cli = command_line();
    let mut pages = vec![("ofconvert.1".to_owned(), cli.clone(), true)];
    for command in cli.get_subcommands() {
        let name = command.get_display_name().unwrap_or(command.get_name());
        pages.push((
            format!("{name}.1"),
            command.clone(),
            reaches_stores(command),
        ));
    }
    pages
}

pub fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.dir {
        return write_all(dir);
    }
    let pages = pages();
    let wanted = match &args.command {
        None => pages.first(),
        Some(name) => pages
            .iter()
            .skip(1)
            .find(|(_, command, _)| command.get_name() == name),
    };
    let Some((_, command, stores)) = wanted else {
        let names: Vec<&str> = pages
            .iter()
            .skip(1)
            .map(|(_, command, _)| command.get_name())
            .collect();
        return Err(UsageError(format!(
            "no command {:?}: a page is there for {}",
            args.command.as_deref().unwrap_or_default(),
            names.join(", ")
        ))
        .into());
    };
    let mut text = Vec::new();
    page(command, *stores, &mut text)?;
    crate::print_all(&text)
}

/// Writes every page into `dir` (made if missing), and names each on stdout.
fn write_all(dir: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let mut written = Vec::new();
    for (name, command, stores) in pages() {
        let path = dir.join(&name);
        let mut text = Vec::new();
        page(&command, stores, &mut text)?;
        std::fs::write(&path, text).with_context(|| format!("{}", path.display()))?;
        written.push(path.display().to_string());
    }
    let mut list = written.join("\n");
    list.push('\n');
    crate::print_all(list.as_bytes())
}
