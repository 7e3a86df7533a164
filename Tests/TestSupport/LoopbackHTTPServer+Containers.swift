public import ContainerKitTesting
import Foundation

/// Container answers for ``LoopbackHTTPServer`` in the lifecycle, preview and transport tests: container bodies,
/// any status, 304 with an entity tag, redirects, truncated bodies, garbage, answers that never come, and
/// hostile bodies that inflate without end, never end, or arrive a byte at a time.
///
/// ```swift
/// let server = try LoopbackHTTPServer { request in
///     request.query("id") == "GTM-K1T5" ? .container(Fixtures.live()) : .status(404)
/// }
/// defer { server.stop() }
/// let source = try HTTPContainerSource(base: server.baseURL)
/// ```
extension LoopbackHTTPServer.Response {
    /// `200 OK` with a container body and, optionally, an `ETag`.
    public static func container(_ body: [UInt8], etag: String? = nil) -> Self {
        var headers = LoopbackHTTPServer.Headers([("Content-Type", "application/json")])
        if let etag { headers.add("ETag", etag) }
        return Self(status: 200, headers: headers, body: Data(body))
    }

    /// Any status with an optional body.
    public static func status(_ status: Int, body: [UInt8] = []) -> Self { Self(status: status, body: Data(body)) }

    /// `304 Not Modified`, with an `ETag` when given.
    public static func notModified(etag: String? = nil) -> Self {
        Self(status: 304, headers: LoopbackHTTPServer.Headers(etag.map { [("ETag", $0)] } ?? []))
    }

    /// A `302 Found` to `location`.
    public static func redirect(_ location: String) -> Self {
        Self(status: 302, headers: LoopbackHTTPServer.Headers([("Location", location)]))
    }

    /// `200 OK` declaring `declaredLength` bytes but sending only `body`, then closing the connection.
    public static func truncated(_ body: [UInt8], declaredLength: Int) -> Self {
        Self(
            status: 200,
            headers: LoopbackHTTPServer.Headers([("Content-Type", "application/json")]),
            body: Data(body),
            fault: .truncated(declaredLength: declaredLength)
        )
    }

    /// Raw bytes that are not HTTP, then close.
    public static func garbage(_ bytes: [UInt8]) -> Self { .fault(.garbage(Data(bytes))) }

    /// No answer until the client goes away or the server stops.
    public static var hang: Self { .fault(.hang) }

    /// A gzip-encoded answer whose body inflates to zeros without end (about 160 bytes of zeros per
    /// compressed byte), `limit` compressed bytes in all.
    public static func gzipBomb(limit: Int = 256 << 20) -> Self {
        let (prefix, period) = deflatedZeros()
        return .fault(
            .stream(
                headers: LoopbackHTTPServer.Headers([
                    ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                ]),
                prefix: Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + prefix),
                chunk: Data(Array(repeating: period, count: 1260).flatMap { $0 }),
                limit: limit
            )
        )
    }

    /// A body without a length that never ends (`limit` bytes in all), 16 KiB of spaces at a time.
    public static func endless(limit: Int = 256 << 20) -> Self {
        .fault(
            .stream(
                headers: LoopbackHTTPServer.Headers([("Content-Type", "application/json")]),
                prefix: Data(),
                chunk: Data(repeating: 32, count: 16 * 1024),
                limit: limit
            )
        )
    }

    /// Headers declaring a 1000-byte body, then one byte every `interval` until the client goes away or the
    /// server stops: for clients' deadlines, which a byte now and then must not push back.
    public static func drip(interval: Duration = .milliseconds(20)) -> Self { .fault(.trickle(interval)) }

    /// A raw deflate stream of zeros with fixed Huffman codes: a literal 0, then "copy 258 bytes from 1
    /// back" (13 bits) forever. From bit 11 on, the stream repeats every 104 bits (13 bytes), so it is
    /// the first 2 bytes, then one 13-byte period again and again.
    static func deflatedZeros() -> (prefix: [UInt8], period: [UInt8]) {
        var bytes: [UInt8] = []
        var bitCount = 0
        func put(_ value: Int, bits: Int, reversed: Bool) {
            for k in 0..<bits {
                let bit = reversed ? (value >> (bits - 1 - k)) & 1 : (value >> k) & 1
                if bitCount % 8 == 0 { bytes.append(0) }
                bytes[bytes.count - 1] |= UInt8(bit) << UInt8(bitCount % 8)
                bitCount += 1
            }
        }
        put(0, bits: 1, reversed: false)  // not the last block
        put(1, bits: 2, reversed: false)  // fixed Huffman codes
        put(0x30, bits: 8, reversed: true)  // literal 0
        for _ in 0..<16 {
            put(0b1100_0101, bits: 8, reversed: true)  // length 258 (code 285)
            put(0, bits: 5, reversed: true)  // distance 1 (code 0)
        }
        return (Array(bytes[0..<2]), Array(bytes[2..<15]))
    }
}

extension Fixtures {
    /// The container ID of the fixtures.
    public static let containerID = "GTM-K1T5"

    /// The live container: tag 1 'Played song' fires on `played`, tag 2 'Shared song' on `shared`.
    public static func live(version: String = "1") -> [UInt8] {
        Array(
            """
            {"resource": {"version": "\(version)",
              "macros": [
                {"function": "__e", "instance_name": "Event Name"},
                {"function": "__md", "instance_name": "Song", "vtp_key": "song"}],
              "tags": [
                {"function": "__funct", "instance_name": "Played song", "tag_id": 1,
                 "vtp_classPath": "com.example.Played",
                 "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]},
                {"function": "__funct", "instance_name": "Shared song", "tag_id": 2,
                 "vtp_classPath": "com.example.Shared",
                 "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]}],
              "predicates": [
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "played"},
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "shared"}],
              "rules": [[["if", 0], ["add", 0]], [["if", 1], ["add", 1]]]},
             "runtime": []}
            """.utf8
        )
    }

    /// The draft (version 7): tag 1 'Played song' on `played`; tag 3 'Played jazz' on `played` when the
    /// pushed `genre` is `jazz`; tag 4 'Skipped' on `skipped`, blocked when `genre` is `jazz`.
    public static func draft(version: String = "7") -> [UInt8] {
        Array(
            """
            {"resource": {"version": "\(version)",
              "macros": [
                {"function": "__e", "instance_name": "Event Name"},
                {"function": "__md", "instance_name": "Song", "vtp_key": "song"},
                {"function": "__md", "instance_name": "Genre", "vtp_key": "genre"}],
              "tags": [
                {"function": "__funct", "instance_name": "Played song", "tag_id": 1,
                 "vtp_classPath": "com.example.Played",
                 "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]},
                {"function": "__funct", "instance_name": "Played jazz", "tag_id": 3,
                 "vtp_classPath": "com.example.Jazz",
                 "vtp_functionArgument": ["list", ["map", "key", "genre", "value", ["macro", 2]]]},
                {"function": "__funct", "instance_name": "Skipped", "tag_id": 4,
                 "vtp_classPath": "com.example.Skipped",
                 "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]}],
              "predicates": [
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "played"},
                {"function": "_eq", "arg0": ["macro", 2], "arg1": "jazz"},
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "skipped"}],
              "rules": [
                [["if", 0], ["add", 0]],
                [["if", 0, 1], ["add", 1]],
                [["if", 2], ["add", 2]],
                [["if", 1], ["block", 2]]]},
             "runtime": []}
            """.utf8
        )
    }

    /// Writes `files` (name → bytes) into a new temporary directory and returns its path.
    public static func directory(_ files: [String: [UInt8]]) throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name))
        }
        return path
    }
}
