// The TagService's request bodies, read by the example's own files (BatchRequest.swift, EventRequest.swift,
// APIError.swift and Readiness.swift, compiled into this harness against Fuzz/Stubs/ for the few Hummingbird
// and NIOCore types they name): `POST /v1/batch` (`BatchRequest`) or `POST /v1/events` (`EventRequest`).
//
// Input: a flags byte (bit 0: a routed user — `X-User-ID` or the path in `--postgres` mode — is the bytes up
// to the first NUL, the body the bytes after it; bit 1: a single event body, else a batch; bits 2-3: the most
// events in a batch, 1000, 1, 2 or 16), then the body.
//
// Beyond not crashing: a batch is refused as a whole exactly when it is not a JSON object with a non-empty
// `events` array of at most the limit (and then with the code that says why); otherwise it answers one item
// and one user per event, in order; every accepted event names a non-empty user ID of at most 997 bytes,
// valid UTF-8 and without NUL, equal to the routed user when there is one, and the user its item reports.
import ContainerKit

func checkAcceptedEvent(_ request: EventRequest, routed: String?) {
    let user = Array(request.userID.utf8)
    precondition(!user.isEmpty && user.count <= UserIDRules.maximumBytes, "user ID of \(user.count) bytes")
    precondition(!user.contains(0), "a user ID with a NUL was accepted")
    precondition(UserIDRules.problem(with: request.userID) == nil, "a user ID the rules refuse was accepted")
    precondition(String(validating: user, as: UTF8.self) != nil, "a user ID is not valid UTF-8")
    precondition(!request.event.isEmpty, "an empty event name was accepted")
    if let routed, !routed.isEmpty {
        precondition(user.elementsEqual(routed.utf8), "an event of another user than the routed one was accepted")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBatchBody(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let flags = bytes.first else { return 0 }
    var body = Array(bytes.dropFirst())
    var routed: String?
    if flags & 1 == 1 {
        let (user, rest) = splitAtNUL(body)
        routed = String(decoding: user, as: UTF8.self)
        body = rest ?? []
    }
    if flags & 2 == 2 {
        if let request = try? EventRequest(body: body, routedUser: routed) {
            checkAcceptedEvent(request, routed: routed)
        }
        return 0
    }
    let limits = BatchLimits(maximumEvents: [1000, 1, 2, 16][Int(flags >> 2 & 3)], maximumBytes: 1 << 20)

    // What the batch should be, read independently.
    var events: [Value]?
    var expected = APIError.Code.malformedJSON
    if case .object(let object)? = try? Value(jsonBytes: body, maximumDepth: EventRequest.maximumDepth + 2) {
        switch object["events"] {
        case nil, .null?, .undefined?: expected = .missingField
        case .array(let array)? where !array.isEmpty:
            if array.count <= limits.maximumEvents { events = array } else { expected = .tooManyEvents }
        default: expected = .invalidField
        }
    }

    let batch: BatchRequest
    do {
        batch = try BatchRequest(body: body, limits: limits, routedUser: routed)
    } catch {
        precondition(events == nil, "a readable batch was refused: \(error.code.rawValue) \(error.message)")
        precondition(error.code == expected, "refused with \(error.code.rawValue), not \(expected.rawValue)")
        return 0
    }
    guard let events else { fatalError("an unreadable batch was read (expected \(expected.rawValue))") }
    precondition(batch.items.count == events.count, "\(batch.items.count) items for \(events.count) events")
    precondition(batch.userIDs.count == events.count, "\(batch.userIDs.count) users for \(events.count) events")
    for (index, item) in batch.items.enumerated() {
        switch item {
        case .success(let request):
            precondition(events[index].objectValue != nil, "event \(index) is not an object but was accepted")
            checkAcceptedEvent(request, routed: routed)
            precondition(
                batch.userIDs[index].map { $0.utf8.elementsEqual(request.userID.utf8) } == true,
                "event \(index) reports another user than it was read for"
            )
        case .failure(let error):
            precondition(!error.message.isEmpty, "a refusal without a message")
        }
    }
    return 0
}
