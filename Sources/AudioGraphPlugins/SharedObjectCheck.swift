// Checks a shared library's file before anything maps it.
//
// dlopen trusts the file: a library cut short (a half-copied plugin, a full
// disk) is mapped as its headers say, and the first touch of a page past the
// end of the file kills the process with SIGBUS, in every command that
// searches the plugin path. A FIFO named like a plugin blocks dlopen's
// `open` forever. So every library is checked here first, reading only its
// headers with plain reads (nothing is mapped, no code runs):
//   - it is a regular file (not a FIFO, folder or device; opened with
//     O_NONBLOCK so that a file swapped for a FIFO cannot block either);
//   - its ELF header: the magic, the class and data encoding of this
//     process (64-bit, little-endian here), the version, the machine of
//     this process, and the type ET_DYN (a shared object);
//   - the program header table and the section header table lie inside
//     the file, and so does every segment's and every section's file data
//     (p_offset + p_filesz, sh_offset + sh_size), which is exactly what a
//     truncated library violates.
#if canImport(Glibc)
import Glibc
#endif

/// The pre-`dlopen` check of a shared library file. [any-thread]
public enum SharedObjectCheck {
    /// Nil when `path` is a shared object this process could map; else why
    /// not, in words for the user ("truncated: segment 2 … ends past the end
    /// of the file (4096 bytes)"). Reads the headers only. [any-thread]
    public static func problem(path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return "cannot read the file: \(errorText(errno))" }
        if let kind = nonRegularKind(st.st_mode) { return "not a regular file (\(kind))" }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return "cannot open the file: \(errorText(errno))" }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else { return "cannot read the file: \(errorText(errno))" }
        if let kind = nonRegularKind(opened.st_mode) { return "not a regular file (\(kind))" }
        return problem(reading: fd, size: UInt64(max(opened.st_size, 0)))
    }

    /// The checks on an open regular file of `size` bytes.
    static func problem(reading fd: Int32, size: UInt64) -> String? {
        if size == 0 { return "an empty file (0 bytes), not a shared library" }
        let ident = read(fd, at: 0, count: Int(min(size, 64)))
        guard ident.count >= 16 else { return "too short for an ELF header (\(size) bytes)" }
        guard ident[0] == 0x7F, ident[1] == 0x45, ident[2] == 0x4C, ident[3] == 0x46 else {
            return "not an ELF file (no ELF magic at the start; \(size) bytes)"
        }
        let host = Host.current
        let cls = ident[4], data = ident[5]
        guard cls == 1 || cls == 2 else { return "damaged ELF header: unknown class \(cls)" }
        guard cls == host.elfClass else {
            return "a \(cls == 1 ? 32 : 64)-bit ELF file; this agraph is \(host.elfClass == 1 ? 32 : 64)-bit"
        }
        guard data == 1 || data == 2 else { return "damaged ELF header: unknown data encoding \(data)" }
        guard data == host.elfData else {
            return "a \(data == 1 ? "little" : "big")-endian ELF file; this machine is \(host.elfData == 1 ? "little" : "big")-endian"
        }
        guard ident[6] == 1 else { return "damaged ELF header: version \(ident[6])" }
        let is64 = cls == 2
        let headerSize = is64 ? 64 : 52
        guard ident.count >= headerSize else { return "truncated: \(size) bytes, shorter than an ELF header (\(headerSize))" }
        let r = Fields(bytes: ident, littleEndian: data == 1)
        let type = r.u16(16), machine = r.u16(18)
        guard r.u32(20) == 1 else { return "damaged ELF header: e_version \(r.u32(20))" }
        if let hostMachine = host.machine, machine != hostMachine {
            return "built for \(machineName(machine)); this machine is \(machineName(hostMachine))"
        }
        guard type == 3 else {
            let names: [UInt64: String] = [0: "no file type", 1: "a relocatable object (.o)", 2: "an executable", 4: "a core dump"]
            return "ELF type \(type) (\(names[type] ?? "unknown")), not a shared object (ET_DYN)"
        }
        let phoff = is64 ? r.u64(32) : r.u32(28)
        let shoff = is64 ? r.u64(40) : r.u32(32)
        let phentsize = r.u16(is64 ? 54 : 42), phnum = r.u16(is64 ? 56 : 44)
        let shentsize = r.u16(is64 ? 58 : 46), shnumField = r.u16(is64 ? 60 : 48)
        let phSize: UInt64 = is64 ? 56 : 32, shSize: UInt64 = is64 ? 64 : 40

        // Program headers: what the loader maps.
        guard phnum > 0 else { return "damaged: no program headers (nothing to load)" }
        guard phnum != 0xFFFF else { return "damaged or unsupported: extended program header numbering" }
        guard phentsize == phSize else { return "damaged ELF header: program header size \(phentsize), expected \(phSize)" }
        if let why = outside("the program header table", offset: phoff, length: phnum * phSize, size: size) { return why }
        let ph = read(fd, at: phoff, count: Int(phnum * phSize))
        guard UInt64(ph.count) == phnum * phSize else { return "cannot read the program header table" }
        let p = Fields(bytes: ph, littleEndian: data == 1)
        var loads = 0
        for i in 0..<Int(phnum) {
            let base = i * Int(phSize)
            let ptype = p.u32(base)
            let offset = is64 ? p.u64(base + 8) : p.u32(base + 4)
            let filesz = is64 ? p.u64(base + 32) : p.u32(base + 16)
            if ptype == 1 { loads += 1 }
            let what = "segment \(i) (\(segmentName(ptype)))"
            if let why = outside(what, offset: offset, length: filesz, size: size) { return why }
        }
        guard loads > 0 else { return "damaged: no loadable (PT_LOAD) segment" }

        // Section headers: what the loader and debuggers read by name.
        if shoff != 0 {
            guard shentsize == shSize else { return "damaged ELF header: section header size \(shentsize), expected \(shSize)" }
            if let why = outside("the section header table", offset: shoff, length: shSize, size: size) { return why }
            var shnum = shnumField
            if shnum == 0 {
                // Extended numbering: section 0's sh_size holds the count.
                let first = Fields(bytes: read(fd, at: shoff, count: Int(shSize)), littleEndian: data == 1)
                guard first.bytes.count == Int(shSize) else { return "cannot read the section header table" }
                shnum = is64 ? first.u64(32) : first.u32(20)
            }
            guard shnum <= 65_536 * 4 else { return "damaged: \(shnum) sections" }
            if let why = outside("the section header table", offset: shoff, length: shnum * shSize, size: size) { return why }
            let sh = Fields(bytes: read(fd, at: shoff, count: Int(shnum * shSize)), littleEndian: data == 1)
            guard UInt64(sh.bytes.count) == shnum * shSize else { return "cannot read the section header table" }
            for i in 0..<Int(shnum) {
                let base = i * Int(shSize)
                let stype = sh.u32(base + 4)
                if stype == 8 || stype == 0 { continue }   // SHT_NOBITS (.bss), SHT_NULL: no file data
                let offset = is64 ? sh.u64(base + 24) : sh.u32(base + 16)
                let length = is64 ? sh.u64(base + 32) : sh.u32(base + 20)
                if let why = outside("section \(i)", offset: offset, length: length, size: size) { return why }
            }
        }
        return nil
    }

    /// Why `offset … offset+length` is not inside a file of `size` bytes, or nil.
    static func outside(_ what: String, offset: UInt64, length: UInt64, size: UInt64) -> String? {
        let (end, overflow) = offset.addingReportingOverflow(length)
        if overflow || end > size {
            let range = overflow ? "offset \(offset), \(length) bytes" : "bytes \(offset)…\(end)"
            return "truncated or damaged: \(what) (\(range)) ends past the end of the file (\(size) bytes)"
        }
        return nil
    }

    /// Up to `count` bytes at `offset` (fewer at the end of the file or on an error).
    static func read(_ fd: Int32, at offset: UInt64, count: Int) -> [UInt8] {
        guard count > 0, offset <= UInt64(Int64.max) else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return pread(fd, base + done, count - done, off_t(Int64(offset) + Int64(done)))
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        return Array(buffer[0..<done])
    }

    /// Little- or big-endian fields of a header.
    struct Fields {
        let bytes: [UInt8]
        let littleEndian: Bool
        func value(_ offset: Int, _ width: Int) -> UInt64 {
            guard offset >= 0, offset + width <= bytes.count else { return 0 }
            var v: UInt64 = 0
            for k in 0..<width {
                let b = UInt64(bytes[offset + (littleEndian ? width - 1 - k : k)])
                v = v << 8 | b
            }
            return v
        }
        func u16(_ o: Int) -> UInt64 { value(o, 2) }
        func u32(_ o: Int) -> UInt64 { value(o, 4) }
        func u64(_ o: Int) -> UInt64 { value(o, 8) }
    }

    /// The ELF identity of this process: from its own executable's header,
    /// else from how it was compiled.
    struct Host {
        var elfClass: UInt8
        var elfData: UInt8
        var machine: UInt64?

        static let current: Host = {
            var host = Host(elfClass: MemoryLayout<Int>.size == 8 ? 2 : 1,
                            elfData: 1.littleEndian == 1 ? 1 : 2, machine: compiledMachine)
            let fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                let b = read(fd, at: 0, count: 20)
                if b.count == 20, b[0] == 0x7F, b[1] == 0x45, b[2] == 0x4C, b[3] == 0x46, b[4] == host.elfClass, b[5] == host.elfData {
                    host.machine = Fields(bytes: b, littleEndian: b[5] == 1).u16(18)
                }
            }
            return host
        }()

        static var compiledMachine: UInt64? {
            #if arch(x86_64)
            return 62
            #elseif arch(arm64)
            return 183
            #elseif arch(i386)
            return 3
            #elseif arch(arm)
            return 40
            #elseif arch(powerpc64le) || arch(powerpc64)
            return 21
            #elseif arch(s390x)
            return 22
            #elseif arch(riscv64)
            return 243
            #else
            return nil
            #endif
        }
    }

    static func machineName(_ m: UInt64) -> String {
        let names: [UInt64: String] = [3: "x86 (32-bit)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390x",
                                       40: "ARM (32-bit)", 62: "x86-64", 183: "AArch64", 243: "RISC-V", 258: "LoongArch"]
        return "\(names[m] ?? "machine") (e_machine \(m))"
    }

    static func segmentName(_ t: UInt64) -> String {
        let names: [UInt64: String] = [1: "PT_LOAD", 2: "PT_DYNAMIC", 3: "PT_INTERP", 4: "PT_NOTE", 6: "PT_PHDR",
                                       7: "PT_TLS", 0x6474E550: "PT_GNU_EH_FRAME", 0x6474E551: "PT_GNU_STACK",
                                       0x6474E552: "PT_GNU_RELRO", 0x6474E553: "PT_GNU_PROPERTY"]
        return names[t] ?? "type \(t)"
    }

    static func nonRegularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a folder"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "file type \(mode & S_IFMT)"
        }
    }

    static func errorText(_ code: Int32) -> String {
        guard let s = strerror(code) else { return "error \(code)" }
        return String(cString: s)
    }
}
