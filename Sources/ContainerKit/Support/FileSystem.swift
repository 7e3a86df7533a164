#if canImport(Glibc)
    package import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed system call on a file: what was being done, the path it touched and the `errno`.
package struct FileSystemError: Error, Sendable, Equatable {
    /// What was being done: `opening`, `writing`, `syncing`, `reading`, `renaming`, `listing`, ….
    package var step: String
    /// The file or directory the step touched.
    package var path: String
    /// The system error number.
    package var errorNumber: Int32

    /// Creates an error.
    package init(step: String, path: String, errorNumber: Int32) {
        self.step = step
        self.path = path
        self.errorNumber = errorNumber
    }

    /// The system's description of ``errorNumber``, lower-cased (`no space left on device`).
    package var reason: String { String(cString: strerror(errorNumber)).lowercased() }
}

/// The package's one set of file system calls: each retries `EINTR` and short writes, and turns a
/// failure into a ``FileSystemError`` naming the step and the path. The saved-container store's
/// ``AtomicFile`` and the durable queue's segment log and JSON-lines destination use them; each module maps
/// the error to its own error type.
package enum FileSystem {
    /// Opens `path` (always close-on-exec).
    package static func openFile(
        _ path: String,
        _ flags: Int32,
        mode: mode_t = 0o644,
        step: String = "opening"
    ) throws(FileSystemError) -> Int32 {
        while true {
            let fd = open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno != EINTR { throw FileSystemError(step: step, path: path, errorNumber: errno) }
        }
    }

    /// Writes all of `bytes`, retrying short writes and `EINTR`.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(FileSystemError) {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw FileSystemError(step: "writing", path: path, errorNumber: n == 0 ? EIO : errno)
            }
        }
    }

    /// Writes all of `bytes`.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileSystemError) {
        guard !bytes.isEmpty else { return }
        var failure: FileSystemError?
        bytes.withUnsafeBytes { buffer in
            do throws(FileSystemError) {
                try writeAll(fd, buffer, path: path)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// `fsync(2)`.
    package static func sync(_ fd: Int32, path: String) throws(FileSystemError) {
        while fsync(fd) != 0 {
            if errno != EINTR { throw FileSystemError(step: "syncing", path: path, errorNumber: errno) }
        }
    }

    /// `fdatasync(2)`: the data and the metadata needed to read it back (the size of an appended file), not
    /// the timestamps — what an append-only log needs, and one journal update less than `fsync`.
    /// (`fsync` where the C library has no `fdatasync`.)
    package static func syncData(_ fd: Int32, path: String) throws(FileSystemError) {
        #if canImport(Glibc)
            while fdatasync(fd) != 0 {
                if errno != EINTR { throw FileSystemError(step: "syncing", path: path, errorNumber: errno) }
            }
        #else
            try sync(fd, path: path)
        #endif
    }

    /// Makes the directory entries in `directory` durable (after creating, renaming or deleting files).
    package static func syncDirectory(_ directory: String) throws(FileSystemError) {
        let fd = try openFile(directory, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try sync(fd, path: directory)
    }

    /// The directory holding `path` (`.` for a bare name).
    package static func directory(of path: String) -> String {
        let slash = path.lastIndex(of: "/")
        return slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    }

    /// One `read(2)` at the descriptor's position (retrying `EINTR`): appends what it gives to `bytes`, at most
    /// `maximum` bytes — what is there now for a pipe or a terminal — and returns how many; 0 at the end of the
    /// input.
    package static func readAvailable(
        _ fd: Int32,
        appendingTo bytes: inout [UInt8],
        maximum: Int,
        path: String
    ) throws(FileSystemError) -> Int {
        let capacity = max(1, maximum)
        while true {
            var failure: Int32 = 0
            let count = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer -> Int in
                let count = read(fd, buffer.baseAddress, capacity)
                if count > 0 { bytes.append(contentsOf: buffer.prefix(count)) }
                if count < 0 { failure = errno }
                return count
            }
            if count >= 0 { return count }
            if failure != EINTR { throw FileSystemError(step: "reading", path: path, errorNumber: failure) }
        }
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    package static func readBytes(
        _ fd: Int32,
        count: Int,
        at offset: Int,
        path: String
    ) throws(FileSystemError) -> [UInt8] {
        // Read into uninitialized memory: a chunk is not zeroed first only to be overwritten (the delivery
        // reads segments in chunks of up to a MiB).
        var failure: Int32 = 0
        let count = max(count, 0)
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            // The buffer may be larger than asked for; only `count` bytes are read.
            var filled = 0
            while filled < count, let base = buffer.baseAddress {
                let n = pread(fd, base + filled, count - filled, off_t(offset + filled))
                if n > 0 {
                    filled += n
                } else if n == 0 {
                    break
                } else if errno != EINTR {
                    failure = errno
                    break
                }
            }
            initialized = filled
        }
        if failure != 0 { throw FileSystemError(step: "reading", path: path, errorNumber: failure) }
        return bytes
    }

    /// The size of an open file.
    package static func fileSize(_ fd: Int32, path: String) throws(FileSystemError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FileSystemError(step: "reading the size of", path: path, errorNumber: errno)
        }
        return Int(info.st_size)
    }

    /// Reads a whole (small) file; `nil` when it does not exist.
    package static func readFile(_ path: String) throws(FileSystemError) -> [UInt8]? {
        let fd: Int32
        do {
            fd = try openFile(path, O_RDONLY)
        } catch {
            if error.errorNumber == ENOENT { return nil }
            throw error
        }
        defer { close(fd) }
        return try readBytes(fd, count: fileSize(fd, path: path), at: 0, path: path)
    }

    /// The names in `directory`, without `.` and `..`.
    package static func listDirectory(_ directory: String) throws(FileSystemError) -> [String] {
        guard let handle = opendir(directory) else {
            throw FileSystemError(step: "listing", path: directory, errorNumber: errno)
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates `directory` and its parents if they are missing; fails with `ENOTDIR` (step
    /// `creating the directory`) when it exists but is not a directory.
    /// `mode` is the permission bits of the directories it creates (before the umask); `0o700` for
    /// private data.
    package static func makeDirectory(_ directory: String, mode: mode_t = 0o755) throws(FileSystemError) {
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += (path.isEmpty && !directory.hasPrefix("/") ? "" : "/") + component
            if mkdir(path, mode) != 0 && errno != EEXIST {
                throw FileSystemError(step: "creating the directory", path: path, errorNumber: errno)
            }
        }
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw FileSystemError(step: "reading", path: directory, errorNumber: errno)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw FileSystemError(step: "creating the directory", path: directory, errorNumber: ENOTDIR)
        }
    }
}
