// Stand-ins for the two NIOCore types that TagServiceCore's request parsers name (ByteBuffer,
// NIOTooManyBytesError), so that the `batchbody` harness compiles those files as they are without building
// SwiftNIO with the fuzzer's instrumentation. Only what those files use; nothing here runs in the harness.

public struct ByteBuffer: Sendable {
    public var readableBytesView: [UInt8]

    public init(bytes: some Sequence<UInt8>) { readableBytesView = Array(bytes) }
}

public struct NIOTooManyBytesError: Error, Sendable {
    public init() {}
}
