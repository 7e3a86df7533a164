// Stand-ins for the few Hummingbird types that TagServiceCore's request parsers (BatchRequest.swift,
// EventRequest.swift, APIError.swift) name beside their parsing — the response they build, the request whose
// body they collect — so that the `batchbody` harness compiles those files as they are without building
// Hummingbird and SwiftNIO with the fuzzer's instrumentation. Only what those files use; the harness calls
// none of it. A file that starts to use more fails the fuzz build: add the stand-in here.
import NIOCore

// As Hummingbird does: files that import only Hummingbird name ByteBuffer.
@_exported import struct NIOCore.ByteBuffer

public enum HTTPResponse {
    public struct Status: Sendable, Hashable {
        public var code: Int

        public init(code: Int) { self.code = code }

        public static let ok = Status(code: 200)
        public static let badRequest = Status(code: 400)
        public static let unauthorized = Status(code: 401)
        public static let requestTimeout = Status(code: 408)
        public static let contentTooLarge = Status(code: 413)
        public static let unsupportedMediaType = Status(code: 415)
        public static let serviceUnavailable = Status(code: 503)
    }
}

public struct HTTPFields: Sendable, ExpressibleByDictionaryLiteral {
    public struct Name: Sendable, Hashable {
        public var rawName: String

        public init(_ rawName: String) { self.rawName = rawName }

        public static let contentType = Name("Content-Type")
        public static let contentLength = Name("Content-Length")
    }

    private var fields: [Name: String] = [:]

    public init(dictionaryLiteral elements: (Name, String)...) {
        for (name, value) in elements { fields[name] = value }
    }

    public subscript(name: Name) -> String? { fields[name] }

    /// Every value of `name` (a stand-in keeps one).
    public subscript(values name: Name) -> [String] { fields[name].map { [$0] } ?? [] }
}

public struct ResponseBody: Sendable {
    public var byteBuffer: ByteBuffer

    public init(byteBuffer: ByteBuffer) { self.byteBuffer = byteBuffer }
}

public struct Response: Sendable {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: ResponseBody

    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: ResponseBody) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

public struct RequestBody: Sendable {
    public var bytes: [UInt8]

    public func collect(upTo limit: Int) async throws -> ByteBuffer {
        guard bytes.count <= limit else { throw NIOTooManyBytesError() }
        return ByteBuffer(bytes: bytes)
    }
}

public struct Request: Sendable {
    public var headers: HTTPFields
    public var body: RequestBody
    public var uri = URI()
}

public struct URI: Sendable {
    public var queryParameters: [Substring: Substring] = [:]
}

/// Stands in for TagServiceCore's `ContentCoding` (its file imports CompressNIO, which the fuzz build does not
/// build): the harness parses bodies, and collects none.
public struct ContentCoding: Sendable {
    public init(_ fields: HTTPFields) {}

    public func decode(_ buffer: ByteBuffer, limit: Int) throws -> ByteBuffer { buffer }
}
