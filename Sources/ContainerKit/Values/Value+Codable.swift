/// `Value` encodes as the JSON value it stands for: `null`, a boolean, a number, a string, an array or an
/// object. JSON has no `undefined`, so `.undefined` encodes as `null`.
///
/// Decoding reads any of those back; integers that fit `Int64` stay integers. Objects keep their key order
/// when the decoder reports keys in order; Foundation's `JSONDecoder` does not promise that, so where key
/// order matters (a session snapshot) ContainerKit writes the value as JSON text it reads back itself.
extension Value: Codable {
    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: AnyCodingKey.self) {
            var map = ValueMap(minimumCapacity: keyed.allKeys.count)
            for key in keyed.allKeys { map[key.stringValue] = try keyed.decode(Value.self, forKey: key) }
            self = .object(map)
            return
        }
        if var list = try? decoder.unkeyedContainer() {
            var values: [Value] = []
            if let count = list.count { values.reserveCapacity(count) }
            while !list.isAtEnd { values.append(try list.decode(Value.self)) }
            self = .array(values)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? single.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? single.decode(Double.self) {
            self = .double(double)
        } else if let string = try? single.decode(String.self) {
            self = .string(string)
        } else {
            throw DecodingError.dataCorruptedError(
                in: single,
                debugDescription: "expected a JSON value (null, boolean, number, string, array or object)"
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .undefined, .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let bool):
            var single = encoder.singleValueContainer()
            try single.encode(bool)
        case .int(let int):
            var single = encoder.singleValueContainer()
            try single.encode(int)
        case .double(let double):
            var single = encoder.singleValueContainer()
            try single.encode(double)
        case .string(let string):
            var single = encoder.singleValueContainer()
            try single.encode(string)
        case .array(let list):
            var unkeyed = encoder.unkeyedContainer()
            for element in list { try unkeyed.encode(element) }
        case .object(let map):
            var keyed = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, element) in map { try keyed.encode(element, forKey: AnyCodingKey(key)) }
        }
    }
}

/// A coding key for any string: the members of a JSON object.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { stringValue = String(intValue) }
}
