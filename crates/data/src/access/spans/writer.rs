//! How an entry of the cache of spans is written: into a temporary file made and counted
//! beforehand (see [`room`](super::room)), then synced, renamed into place and its directory
//! synced, so that after a crash an entry is whole or not there.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use super::entry::{trailer, BLOCK};
use super::room::Room;

/// An entry being written: room for its bytes reserved, a temporary file locked (so that
/// nothing takes it for a dead writer's) and as long as the entry will be. Dropped before it
/// is published, it is removed and its room given back.
pub(crate) struct EntryWriter {
    dir: PathBuf,
    name: String,
    temp: PathBuf,
    file: BufWriter<File>,
    len: u64,
    written: u64,
    /// The hashes of the blocks written whole, and of the one being written.
    hashes: Vec<u64>,
    block: Xxh3,
    published: bool,
}

impl EntryWriter {
    /// A writer of `len` bytes to the entry `name` in `dir`, to the temporary file `temp`
    /// reserved for it (locked, as long as the entry will be).
    pub(super) fn new(dir: &Path, name: String, temp: PathBuf, file: File, len: u64) -> Self {
        EntryWriter {
            dir: dir.to_path_buf(),
            name,
            temp,
            file: BufWriter::with_capacity(1 << 20, file),
            len,
            written: 0,
            hashes: Vec::with_capacity(len.div_ceil(BLOCK) as usize),
            block: Xxh3::new(),
            published: false,
        }
    }

    /// Bytes still to be written.
    pub(crate) fn remaining(&self) -> u64 {
        self.len - self.written
    }

    /// Writes `bytes`, which follow those written before.
    pub(crate) fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if bytes.len() as u64 > self.remaining() {
            return Err(io::Error::other(format!(
                "{}: more bytes than the {} reserved",
                self.name, self.len
            )));
        }
        self.file.write_all(bytes)?;
        while !bytes.is_empty() {
            let in_block = (BLOCK - self.written % BLOCK).min(bytes.len() as u64) as usize;
            self.block.update(&bytes[..in_block]);
            self.written += in_block as u64;
            bytes = &bytes[in_block..];
            if self.written.is_multiple_of(BLOCK) || self.written == self.len {
                self.hashes.push(self.block.digest());
                self.block.reset();
            }
        }
        Ok(())
    }

    /// Publishes the entry once all its bytes are written: trailer, sync, rename into place,
    /// and the directory synced.
    pub(crate) fn publish(mut self) -> io::Result<()> {
        if self.remaining() != 0 {
            return Err(io::Error::other(format!(
                "{}: {} bytes of {} written",
                self.name, self.written, self.len
            )));
        }
        self.file.write_all(&trailer(self.len, &self.hashes))?;
        self.file.flush()?;
        // The bytes reach the disk before the name does: after a crash an entry is whole,
        // or not there.
        self.file.get_ref().sync_all()?;
        let room = Room::lock(&self.dir)?;
        fs::rename(&self.temp, self.dir.join(&self.name))?;
        self.published = true;
        drop(room);
        File::open(&self.dir)?.sync_all()
    }
}

impl Drop for EntryWriter {
    fn drop(&mut self) {
        if self.published {
            return;
        }
        // Not published: the temporary file goes and its room is given back (a writer that
        // dies leaves both to the next count of the room, which finds its file unlocked).
        if let Ok(room) = Room::lock(&self.dir) {
            if fs::remove_file(&self.temp).is_ok() {
                room.give_back(self.len);
            }
        }
    }
}
