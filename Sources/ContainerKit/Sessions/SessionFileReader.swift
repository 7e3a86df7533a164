#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a sessions file line by line with bounded memory: at most one chunk plus one line (of at most
/// ``maximumLineBytes``) is held at a time, whatever the file's size.
///
/// Only a regular file is read: the path is opened non-blocking (a FIFO cannot hold the open forever) and
/// checked with `fstat` after the open (a device such as `/dev/zero`, a directory or a socket is refused
/// before a byte is read).
struct SessionFileReader {
    /// The longest line read; a longer one is skipped as unreadable (its bytes are not kept).
    static let maximumLineBytes = 16 << 20
    private static let chunkBytes = 1 << 20

    /// One line: its bytes (without the newline), its 1-based number and the byte offset it starts at.
    /// `bytes` is `nil` for a line longer than ``maximumLineBytes``.
    struct Line {
        var bytes: ArraySlice<UInt8>?
        var number: Int
        var offset: Int
    }

    /// Opens `path`; `nil` when it does not exist.
    /// - Throws: ``ContainerError`` (`io_error`) when it cannot be opened or is not a regular file.
    static func open(_ path: String) throws(ContainerError) -> Int32? {
        let fd: Int32
        do {
            fd = try FileSystem.openFile(path, O_RDONLY | O_NONBLOCK)
        } catch {
            if error.errorNumber == ENOENT { return nil }
            throw ContainerError(.io, "cannot open '\(path)': \(error.reason)", file: path)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno)).lowercased()
            close(fd)
            throw ContainerError(.io, "cannot read '\(path)': \(reason)", file: path)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw ContainerError(.io, "'\(path)' is not a regular file", file: path)
        }
        return fd
    }

    /// Calls `body` with every line of the open file `fd`, from `offset` on, and closes nothing.
    /// - Throws: ``ContainerError`` (`io_error`) when a read fails, or what `body` throws.
    static func forEachLine(
        of fd: Int32,
        path: String,
        from start: Int = 0,
        _ body: (Line) throws(ContainerError) -> Void
    ) throws(ContainerError) {
        var pending: [UInt8] = []
        var overlong = false
        var number = 0
        var lineStart = start
        var offset = start
        while true {
            let chunk: [UInt8]
            do {
                chunk = try FileSystem.readBytes(fd, count: chunkBytes, at: offset, path: path)
            } catch {
                throw ContainerError(.io, "cannot read '\(path)': \(error.reason)", file: path)
            }
            if chunk.isEmpty { break }
            var from = chunk.startIndex
            while from < chunk.endIndex {
                guard let newline = chunk[from...].firstIndex(of: 0x0A) else {
                    if !overlong {
                        pending.append(contentsOf: chunk[from...])
                        if pending.count > maximumLineBytes {
                            overlong = true
                            pending = []
                        }
                    }
                    break
                }
                number += 1
                if overlong {
                    try body(Line(bytes: nil, number: number, offset: lineStart))
                } else if pending.isEmpty {
                    try body(Line(bytes: chunk[from..<newline], number: number, offset: lineStart))
                } else {
                    pending.append(contentsOf: chunk[from..<newline])
                    let complete = pending.count > maximumLineBytes ? nil : pending[...]
                    try body(Line(bytes: complete, number: number, offset: lineStart))
                }
                pending = []
                overlong = false
                lineStart = offset + (newline - chunk.startIndex) + 1
                from = newline + 1
            }
            offset += chunk.count
        }
        if overlong || !pending.isEmpty {
            number += 1
            try body(Line(bytes: overlong ? nil : pending[...], number: number, offset: lineStart))
        }
    }

    /// Whether a line holds nothing but spaces, tabs and carriage returns.
    static func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }
    }
}
