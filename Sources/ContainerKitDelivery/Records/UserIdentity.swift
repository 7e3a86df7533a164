public import ContainerKit

/// Who a record is about, in one of the three ways Braze's `/users/track` identifies a user.
///
/// In JSON (records and Braze objects alike) an identity is one member of the enclosing object:
/// `"external_id": "u-1"`, `"braze_id": "5f…"` or `"user_alias": {"alias_name": "…", "alias_label": "…"}`.
public enum UserIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The host's own user ID, set by `changeUser`.
    case externalID(String)
    /// The identifier Braze's SDKs give an anonymous device user.
    case brazeID(String)
    /// A user alias: a name unique within its label (for example an anonymous cookie ID).
    case userAlias(name: String, label: String)

    /// The JSON member name Braze uses for this kind of identity.
    public var fieldName: String {
        switch self {
        case .externalID: return "external_id"
        case .brazeID: return "braze_id"
        case .userAlias: return "user_alias"
        }
    }

    /// The JSON member value: a string, or `{"alias_name", "alias_label"}` for an alias.
    public var fieldValue: Value {
        switch self {
        case .externalID(let id), .brazeID(let id): return .string(id)
        case .userAlias(let name, let label):
            return .object(["alias_name": .string(name), "alias_label": .string(label)])
        }
    }

    /// A one-member object such as `{"external_id": "u-1"}`.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 1)
        map[fieldName] = fieldValue
        return .object(map)
    }

    /// Reads the identity member of a record or Braze object; `nil` when it has none.
    ///
    /// When several are present, `external_id` wins over `braze_id`, which wins over `user_alias`.
    public init?(members map: ValueMap) {
        if case .string(let id)? = map["external_id"] {
            self = .externalID(id)
        } else if case .string(let id)? = map["braze_id"] {
            self = .brazeID(id)
        } else if case .object(let alias)? = map["user_alias"],
            case .string(let name)? = alias["alias_name"], case .string(let label)? = alias["alias_label"]
        {
            self = .userAlias(name: name, label: label)
        } else {
            return nil
        }
    }

    /// `external_id 'u-1'`, `braze_id '…'` or `user_alias 'name' (label 'label')`, for messages.
    public var description: String {
        switch self {
        case .externalID(let id): return "external_id '\(id)'"
        case .brazeID(let id): return "braze_id '\(id)'"
        case .userAlias(let name, let label): return "user_alias '\(name)' (label '\(label)')"
        }
    }
}
