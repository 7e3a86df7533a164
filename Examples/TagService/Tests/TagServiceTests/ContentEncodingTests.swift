import CompressNIO
import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import TagServiceCore

/// Bodies sent with `Content-Encoding` (Segment's and RudderStack's SDKs gzip their batches): gzip and deflate
/// are read, bounded by the body limit once decompressed; any other coding, and a body that is not of its coding,
/// is refused before anything is pushed.
@Suite struct ContentEncodingTests {
    static func encoded(_ body: ByteBuffer, _ algorithm: CompressionAlgorithm) throws -> ByteBuffer {
        var input = body
        return try input.compress(with: algorithm)
    }

    static func headers(_ coding: String) -> HTTPFields {
        [.contentType: "application/json", .contentEncoding: coding]
    }

    @Test func gzipAndDeflateBodiesArePushedLikePlainOnes() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for (coding, algorithm) in [
                ("gzip", CompressionAlgorithm.gzip()), ("deflate", .zlib()), ("X-GZIP", .gzip()),
                // A raw deflate stream under `deflate`, as Go's compress/flate and .NET's DeflateStream write it.
                ("Deflate", .deflate()),
            ] {
                let body = try Self.encoded(eventBody(user: "user-\(coding)"), algorithm)
                try await client.execute(uri: "/v1/events", method: .post, headers: Self.headers(coding), body: body) {
                    response in
                    #expect(response.status == .ok, "\(coding)")
                    let answer = try response.json
                    #expect(answer.firedNames == ["Braze - played song", "Braze - first play"], "\(coding)")
                }
            }
            let batch = try Self.encoded(
                batchBody([batchEvent(user: "b1", title: "x"), batchEvent(user: "b2", title: "y")]),
                .gzip()
            )
            try await client.execute(uri: "/v1/batch", method: .post, headers: Self.headers("gzip"), body: batch) {
                response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 2)
            }
        }
    }

    @Test func aCodingTheServiceDoesNotReadIsRefusedNotReadAsJSON() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for (coding, words) in [
                ("br", "the body's Content-Encoding 'br' is not supported: send it as gzip, deflate or without one"),
                ("gzip, gzip", "the body is encoded more than once (Content-Encoding 'gzip, gzip')"),
            ] {
                // A plain JSON body: before, any coding was ignored and the body read as it came.
                try await client.execute(
                    uri: "/v1/events",
                    method: .post,
                    headers: Self.headers(coding),
                    body: eventBody(user: "u")
                ) { response in
                    #expect(response.status == .unsupportedMediaType, "\(coding)")
                    let error = try #require(try response.json["error"]?.objectValue)
                    #expect(error["code"] == "unsupported_content_encoding")
                    #expect(error["message"]?.stringValue?.hasPrefix(words) == true, "\(error)")
                }
            }
            try await client.execute(
                uri: "/v1/events",
                method: .post,
                headers: Self.headers("identity"),
                body: eventBody(user: "u")
            ) {
                response in
                #expect(response.status == .ok)
            }
        }
        #expect(service.sessions.statistics.created == 1)
    }

    @Test func aBodyThatIsNotItsCodingOrDecompressesPastTheLimitIsRefusedAndNothingIsPushed() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.maximumBodyBytes = 4096
        let service = try await fixture.make()
        let whole = try Self.encoded(eventBody(user: "u"), .gzip())
        // A kilobyte that decompresses to a megabyte: a body within the limit on the wire, far past it decoded.
        let large = eventBody(user: "u", parameters: #"{"title": "\#(String(repeating: "a", count: 1 << 20))"}"#)
        let bomb = try Self.encoded(large, .gzip())
        #expect(bomb.readableBytes < 4096)
        let raw = try Self.encoded(eventBody(user: "u"), .deflate())
        #expect(!ContentCoding.startsWithZlibHeader(raw))
        #expect(ContentCoding.startsWithZlibHeader(try Self.encoded(eventBody(user: "u"), .zlib())))
        let cases: [(String, String, ByteBuffer, HTTPResponse.Status, String, String)] =
            [
                (
                    "cut", "gzip", whole.getSlice(at: 0, length: whole.readableBytes - 8)!, .badRequest,
                    "malformed_encoding", "ends early"
                ),
                ("not gzip", "gzip", eventBody(user: "u"), .badRequest, "malformed_encoding", "is not gzip data"),
                ("empty", "gzip", ByteBuffer(), .badRequest, "malformed_encoding", "the body is empty"),
                (
                    "trailing bytes", "gzip", whole + ByteBuffer(string: "{}"), .badRequest, "malformed_encoding",
                    "bytes after"
                ),
                ("bomb", "gzip", bomb, .contentTooLarge, "body_too_large", "larger than 4096 bytes once decompressed"),
                // A raw deflate stream has no trailer: where it stops tells a cut one, wherever it is cut.
                (
                    "raw, trailing bytes", "deflate", raw + ByteBuffer(string: "{}"), .badRequest, "malformed_encoding",
                    "bytes after"
                ),
                (
                    "raw bomb", "deflate", try Self.encoded(large, .deflate()), .contentTooLarge, "body_too_large",
                    "larger than 4096 bytes once decompressed"
                ),
                (
                    "not deflate", "deflate", eventBody(user: "u"), .badRequest, "malformed_encoding",
                    "is not deflate data"
                ),
            ]
            + (1..<raw.readableBytes).map { cut in
                (
                    "raw, cut at \(cut)", "deflate", raw.getSlice(at: 0, length: cut)!, .badRequest,
                    "malformed_encoding", "ends early"
                )
            }
        try await service.application.test(.router) { client in
            for (name, coding, body, status, code, words) in cases {
                try await client.execute(uri: "/v1/events", method: .post, headers: Self.headers(coding), body: body) {
                    response in
                    #expect(response.status == status, "\(name)")
                    let error = try #require(try response.json["error"]?.objectValue, "\(name)")
                    #expect(error["code"]?.stringValue == code, "\(name)")
                    #expect(error["message"]?.stringValue?.contains(words) == true, "\(name): \(error)")
                }
            }
        }
        #expect(service.sessions.statistics.created == 0)
    }
}

extension ByteBuffer {
    fileprivate static func + (lhs: ByteBuffer, rhs: ByteBuffer) -> ByteBuffer {
        var joined = lhs
        var tail = rhs
        joined.writeBuffer(&tail)
        return joined
    }
}
