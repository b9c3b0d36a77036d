//! Looking at a library before loading it.
//!
//! `dlopen` runs a library's constructors (`.init_array`) before the host
//! can ask whether it is a toolhost module at all, so a plan naming any
//! `.so` would run that file's code during `check` or `list`. Reading the
//! ELF dynamic symbol table first, with a parser and without mapping the
//! file for execution, refuses such files before any of their code runs.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use object::elf;
use object::read::elf::{FileHeader, Sym};
use object::{Endianness, ReadCache};

use super::error::ModuleError;

/// The symbol every toolhost library exports (abi_stable's mangled name of
/// the root module loader; `export_module!` emits it).
pub const ROOT_MODULE_SYMBOL: &str = abi_stable::library::ROOT_MODULE_LOADER_NAME;

/// Checks that `path` is a shared library exporting the toolhost root
/// module, without executing anything from it.
pub fn exports_root_module(path: &Path, label: &str) -> Result<(), ModuleError> {
    let not_a_library = |detail: String| ModuleError::NotALibrary {
        label: label.to_string(),
        path: path.to_path_buf(),
        detail,
    };
    // Non-blocking, so a FIFO named as a module cannot hang the open; only
    // a regular file is read, and only the parts the parser asks for (the
    // headers and the dynamic symbol table, not a 9 MB library whole:
    // reading it all cost `toolhost list` milliseconds per module).
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| not_a_library(e.to_string()))?;
    let meta = opened.metadata().map_err(|e| not_a_library(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_a_library("it is not a regular file".into()));
    }
    let cache = object::ReadCache::new(opened);
    let exported = match object::FileKind::parse(&cache) {
        Ok(object::FileKind::Elf64) => exports::<elf::FileHeader64<Endianness>>(&cache),
        Ok(object::FileKind::Elf32) => exports::<elf::FileHeader32<Endianness>>(&cache),
        Ok(kind) => {
            return Err(not_a_library(format!(
                "it is a {kind:?} file, not an ELF shared library"
            )))
        }
        Err(e) => return Err(not_a_library(format!("not an object file ({e})"))),
    };
    match exported {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(Refused::Parse(e)) => return Err(not_a_library(format!("not an object file ({e})"))),
        Err(Refused::Kind(kind)) => {
            let what = match elf::FileType(kind) {
                elf::ET_EXEC => "an executable".to_string(),
                elf::ET_REL => "a relocatable object".to_string(),
                elf::ET_CORE => "a core dump".to_string(),
                _ => format!("an ELF file of type {kind}"),
            };
            return Err(not_a_library(format!("it is {what}, not a shared library")));
        }
    }
    Err(ModuleError::NoRootModule {
        label: label.to_string(),
        path: path.to_path_buf(),
    })
}

/// Why [`exports`] refused a file that starts like ELF.
enum Refused {
    /// Its headers or dynamic symbol table do not parse.
    Parse(object::Error),
    /// It is an ELF file, but not a shared object (`e_type`).
    Kind(u16),
}

/// Whether the ELF file exports the root module: a defined, global entry of
/// its dynamic symbol table (what `dlsym` would find).
///
/// Only the file header, the section headers and `.dynsym`/`.dynstr` are
/// read. `object::File::parse` would also read the full symbol table
/// (`.symtab`: 438 KB of the release filesystem module, seen with
/// `strace`), a few percent of `toolhost serve`'s start for each module.
fn exports<Elf: FileHeader<Endian = Endianness>>(data: &ReadCache<std::fs::File>) -> Result<bool, Refused> {
    let header = Elf::parse(data).map_err(Refused::Parse)?;
    let endian = header.endian().map_err(Refused::Parse)?;
    let kind = header.e_type(endian);
    if kind != elf::ET_DYN {
        return Err(Refused::Kind(kind.0));
    }
    let sections = header.sections(endian, data).map_err(Refused::Parse)?;
    let symbols = sections
        .symbols(endian, data, elf::SHT_DYNSYM)
        .map_err(Refused::Parse)?;
    let strings = symbols.strings();
    Ok(symbols.iter().any(|symbol| {
        symbol.is_definition(endian, strings)
            && symbol.st_bind() != elf::STB_LOCAL
            && symbol.name(endian, strings).ok() == Some(ROOT_MODULE_SYMBOL.as_bytes())
    }))
}
