public import Foundation

#if canImport(Glibc)
    import Glibc
    // close(2) under a name that the type's own close() does not hide.
    private let systemClose = Glibc.close
#elseif canImport(Darwin)
    import Darwin
    private let systemClose = Darwin.close
#endif

/// A port on 127.0.0.1 that refuses every connection, for as long as it is held: a socket bound to it that
/// never listens (and does not allow address reuse), so no other server — a parallel test's — can take the
/// port meanwhile. A stopped server's port gives no such promise: another test may bind it at once.
///
/// ```swift
/// let refusing = try RefusingPort()
/// defer { refusing.close() }
/// let source = try HTTPContainerSource(base: refusing.baseURL)   // fetches fail with no_network
/// ```
public final class RefusingPort: Sendable {
    /// The port.
    public let port: UInt16
    private let fd: Int32

    /// Binds a free port on 127.0.0.1 without listening on it.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            _ = systemClose(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Frees the port.
    public func close() { _ = systemClose(fd) }
}
