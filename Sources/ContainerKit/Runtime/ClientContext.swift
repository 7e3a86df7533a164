import Foundation

/// What the built-in macros know about the client a session runs for: platform, language, app and device.
///
/// A Linux service serves many end users, so each ``DataLayer`` carries its own context (and can update it
/// with ``DataLayer/updateContext(_:)``). Fields the service does not know are empty: a server reports
/// nothing about itself to the container's built-ins. ``host`` is the context of the machine ContainerKit
/// runs on, which the command-line tool uses.
///
/// `Codable` with the snake_case keys of ``keys``; a missing key decodes as the field's default.
public struct ClientContext: Sendable, Hashable, Codable {
    /// `__p`, Platform: `"Android"`, `"iOS"`, `"Linux"`, ….
    public var platform: String
    /// `__l`, Language: an ISO-639 code such as `"en"`.
    public var language: String
    /// `__ov`, OS Version.
    public var osVersion: String
    /// `__ai`, App ID (package name or bundle id).
    public var appID: String
    /// `__an`, App Name.
    public var appName: String
    /// `__av`, App Version Code.
    public var appVersionCode: String
    /// `__avn`, App Version Name.
    public var appVersionName: String
    /// `__sv`, SDK Version.
    public var sdkVersion: String
    /// `__dn`, Device Name.
    public var deviceName: String
    /// `__rs`, Resolution, as `"<width>x<height>"`.
    public var resolution: String
    /// `__ate`, Advertising Tracking Enabled.
    public var advertisingTrackingEnabled: Bool
    /// `__aid`, Advertiser ID, when the client has one.
    public var advertiserID: String?
    /// `__u`, the URL of the page the session's events come from: what Page URL, Page Hostname, Page Path and the
    /// URL variables without a custom source read (a `gtm.url` pushed to the data layer comes first, as in gtm.js).
    /// `nil` when not known: those variables are then undefined, and a decision that reads one says so
    /// (``FiredTag/unknownInputs``).
    public var pageURL: String?
    /// `__f`, Referrer: the URL of the page before it, `""` for a page opened without one (a `gtm.referrer` pushed to
    /// the data layer comes first). `nil` when not known, as for ``pageURL``.
    public var referrer: String?
    /// `__k`, 1st-Party Cookie: the page's cookies as a `Cookie` request header (or `document.cookie`) has them,
    /// `name=value; name2=value2` (a `gtm.cookie` pushed to the data layer comes first). `nil` when not known, as
    /// for ``pageURL``; `""` for a page without cookies.
    public var cookies: String?
    /// The visitor's location, its most precise code: an ISO 3166-2 region (`ES-MD`), an ISO 3166-1 alpha-2
    /// country (`ES`) or empty. One string: the region names its country.
    private var location: String = ""

    /// The visitor's country, ISO 3166-1 alpha-2 (`ES`), upper case; empty when unknown. What region-specific
    /// consent defaults are matched against (see ``ConsentState/apply(_:country:region:)``). Setting a
    /// country other than the region's clears the region.
    public var country: String {
        get {
            guard let dash = location.utf8.firstIndex(of: 0x2D) else { return location }
            return String(location[..<dash])
        }
        set {
            let code = newValue.uppercased()
            if code != country { location = code }
        }
    }

    /// The visitor's region, ISO 3166-2 (`ES-MD`: the country, a hyphen and the subdivision), upper case; empty
    /// when unknown. Setting one sets ``country`` to its country.
    public var region: String {
        get { location.utf8.contains(0x2D) ? location : "" }
        set {
            let code = newValue.uppercased()
            if code.isEmpty {
                location = country
            } else {
                location = code
            }
        }
    }

    /// Creates a context; a field not given is empty (``sdkVersion`` is this library's), so nothing about
    /// the server leaks into the container's built-ins.
    public init(
        platform: String = "",
        language: String = "",
        osVersion: String = "",
        appID: String = "",
        appName: String = "",
        appVersionCode: String = "",
        appVersionName: String = "",
        sdkVersion: String = ContainerKitVersion.sdkVersion,
        deviceName: String = "",
        resolution: String = "",
        advertisingTrackingEnabled: Bool = false,
        advertiserID: String? = nil,
        pageURL: String? = nil,
        referrer: String? = nil,
        cookies: String? = nil
    ) {
        self.platform = platform
        self.language = language
        self.osVersion = osVersion
        self.appID = appID
        self.appName = appName
        self.appVersionCode = appVersionCode
        self.appVersionName = appVersionName
        self.sdkVersion = sdkVersion
        self.deviceName = deviceName
        self.resolution = resolution
        self.advertisingTrackingEnabled = advertisingTrackingEnabled
        self.advertiserID = advertiserID
        self.pageURL = pageURL
        self.referrer = referrer
        self.cookies = cookies
    }

    /// The context of the machine ContainerKit runs on: its platform, language, OS version and host name
    /// (what `containerkit run` reports unless told otherwise). A service should not use it for its users.
    public static var host: ClientContext {
        let host = HostInfo.shared
        return ClientContext(
            platform: host.platform,
            language: host.language,
            osVersion: host.osVersion,
            deviceName: host.deviceName
        )
    }

    /// What a server reports when it knows nothing about the client: every field empty.
    public static let server = ClientContext()

    /// The keys ``setValue(_:forKey:)`` accepts, as the CLI's `--context key=value` spells them.
    public static let keys: [String] = [
        "platform", "language", "os_version", "app_id", "app_name", "app_version_code", "app_version_name",
        "sdk_version", "device_name", "resolution", "advertising_tracking_enabled", "advertiser_id", "country",
        "region", "page_url", "referrer", "cookies",
    ]

    /// Sets one field by its snake_case key (see ``keys``).
    /// - Throws: ``ContainerError`` with code `invalid_structure` for an unknown key or a bad boolean.
    public mutating func setValue(_ value: String, forKey key: String) throws(ContainerError) {
        switch key {
        case "platform": platform = value
        case "language": language = value
        case "os_version": osVersion = value
        case "app_id": appID = value
        case "app_name": appName = value
        case "app_version_code": appVersionCode = value
        case "app_version_name": appVersionName = value
        case "sdk_version": sdkVersion = value
        case "device_name": deviceName = value
        case "resolution": resolution = value
        case "advertiser_id": advertiserID = value
        case "page_url": pageURL = value.isEmpty ? nil : value
        case "referrer": referrer = value
        case "cookies": cookies = value
        case "country":
            guard value.isEmpty || ClientContext.isCountryCode(value) else {
                throw ContainerError(
                    .invalidStructure,
                    "context key 'country' needs an ISO 3166-1 alpha-2 code such as 'ES', not '\(value)'"
                )
            }
            country = value
        case "region":
            guard value.isEmpty || ClientContext.isRegionCode(value) else {
                throw ContainerError(
                    .invalidStructure,
                    "context key 'region' needs an ISO 3166-2 code such as 'ES-MD', not '\(value)'"
                )
            }
            if !value.isEmpty, !country.isEmpty, !value.uppercased().hasPrefix(country + "-") {
                throw ContainerError(
                    .invalidStructure,
                    "context key 'region' '\(value)' is not in the country '\(country)'"
                )
            }
            region = value
        case "advertising_tracking_enabled":
            switch value.lowercased() {
            case "true", "1", "yes": advertisingTrackingEnabled = true
            case "false", "0", "no": advertisingTrackingEnabled = false
            default:
                throw ContainerError(
                    .invalidStructure,
                    "context key 'advertising_tracking_enabled' needs true or false, not '\(value)'"
                )
            }
        default:
            throw ContainerError(
                .invalidStructure,
                "unknown context key '\(key)'; known keys: \(ClientContext.keys.joined(separator: ", "))"
            )
        }
    }
}

extension ClientContext {
    /// Whether `code` is two ASCII letters (ISO 3166-1 alpha-2, any case).
    static func isCountryCode(_ code: String) -> Bool {
        code.utf8.count == 2 && code.utf8.allSatisfy(isLetter)
    }

    /// Whether `code` is an ISO 3166-2 code: a country code, `-`, and 1 to 3 ASCII letters or digits.
    static func isRegionCode(_ code: String) -> Bool {
        let bytes = Array(code.utf8)
        guard bytes.count >= 4, bytes.count <= 6, bytes[2] == 0x2D else { return false }
        return bytes[0..<2].allSatisfy(isLetter)
            && bytes[3...].allSatisfy { isLetter($0) || (0x30...0x39).contains($0) }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte | 0x20) }
}

extension ClientContext {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        self.init()
        for key in Self.inSettingOrder(container.allKeys, key: \.stringValue) {
            switch key.stringValue {
            case "advertising_tracking_enabled":
                advertisingTrackingEnabled = try container.decode(Bool.self, forKey: key)
            case "advertiser_id":
                advertiserID = try container.decodeIfPresent(String.self, forKey: key)
            case "page_url":
                pageURL = try container.decodeIfPresent(String.self, forKey: key)
            case "referrer":
                referrer = try container.decodeIfPresent(String.self, forKey: key)
            case "cookies":
                cookies = try container.decodeIfPresent(String.self, forKey: key)
            default:
                guard ClientContext.keys.contains(key.stringValue) else { continue }
                try setValue(try container.decode(String.self, forKey: key), forKey: key.stringValue)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(platform, forKey: Key("platform"))
        try container.encode(language, forKey: Key("language"))
        try container.encode(osVersion, forKey: Key("os_version"))
        try container.encode(appID, forKey: Key("app_id"))
        try container.encode(appName, forKey: Key("app_name"))
        try container.encode(appVersionCode, forKey: Key("app_version_code"))
        try container.encode(appVersionName, forKey: Key("app_version_name"))
        try container.encode(sdkVersion, forKey: Key("sdk_version"))
        try container.encode(deviceName, forKey: Key("device_name"))
        try container.encode(resolution, forKey: Key("resolution"))
        try container.encode(advertisingTrackingEnabled, forKey: Key("advertising_tracking_enabled"))
        try container.encodeIfPresent(advertiserID, forKey: Key("advertiser_id"))
        if !country.isEmpty { try container.encode(country, forKey: Key("country")) }
        if !region.isEmpty { try container.encode(region, forKey: Key("region")) }
        try container.encodeIfPresent(pageURL, forKey: Key("page_url"))
        try container.encodeIfPresent(referrer, forKey: Key("referrer"))
        try container.encodeIfPresent(cookies, forKey: Key("cookies"))
    }

    /// The context as a JSON object with the keys of ``keys`` (what ``init(jsonValue:)`` reads).
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 12)
        map["platform"] = .string(platform)
        map["language"] = .string(language)
        map["os_version"] = .string(osVersion)
        map["app_id"] = .string(appID)
        map["app_name"] = .string(appName)
        map["app_version_code"] = .string(appVersionCode)
        map["app_version_name"] = .string(appVersionName)
        map["sdk_version"] = .string(sdkVersion)
        map["device_name"] = .string(deviceName)
        map["resolution"] = .string(resolution)
        map["advertising_tracking_enabled"] = .bool(advertisingTrackingEnabled)
        if let advertiserID { map["advertiser_id"] = .string(advertiserID) }
        if !country.isEmpty { map["country"] = .string(country) }
        if !region.isEmpty { map["region"] = .string(region) }
        if let pageURL { map["page_url"] = .string(pageURL) }
        if let referrer { map["referrer"] = .string(referrer) }
        if let cookies { map["cookies"] = .string(cookies) }
        return .object(map)
    }

    /// Appends the compact JSON text of ``jsonValue`` (the same bytes) without building the map: a session's
    /// snapshot writes its context every time it is saved.
    package func writeJSON(to writer: inout JSONByteWriter) {
        writer.raw(#"{"platform":"#)
        writer.string(platform)
        writer.raw(#","language":"#)
        writer.string(language)
        writer.raw(#","os_version":"#)
        writer.string(osVersion)
        writer.raw(#","app_id":"#)
        writer.string(appID)
        writer.raw(#","app_name":"#)
        writer.string(appName)
        writer.raw(#","app_version_code":"#)
        writer.string(appVersionCode)
        writer.raw(#","app_version_name":"#)
        writer.string(appVersionName)
        writer.raw(#","sdk_version":"#)
        writer.string(sdkVersion)
        writer.raw(#","device_name":"#)
        writer.string(deviceName)
        writer.raw(#","resolution":"#)
        writer.string(resolution)
        writer.raw(
            advertisingTrackingEnabled
                ? #","advertising_tracking_enabled":true"# : #","advertising_tracking_enabled":false"#
        )
        if let advertiserID {
            writer.raw(#","advertiser_id":"#)
            writer.string(advertiserID)
        }
        if !location.isEmpty {
            writer.raw(#","country":"#)
            writer.string(country)
            if !region.isEmpty {
                writer.raw(#","region":"#)
                writer.string(region)
            }
        }
        if let pageURL {
            writer.raw(#","page_url":"#)
            writer.string(pageURL)
        }
        if let referrer {
            writer.raw(#","referrer":"#)
            writer.string(referrer)
        }
        if let cookies {
            writer.raw(#","cookies":"#)
            writer.string(cookies)
        }
        writer.raw(0x7D)
    }

    /// Reads a context from a JSON object with the keys of ``keys`` (a client's request, a snapshot);
    /// missing keys keep their defaults, strings, numbers and booleans are taken as their string forms.
    /// - Throws: ``ContainerError`` (`invalid_structure`) for an unknown key or a value of the wrong type.
    ///   The error's ``ContainerError/pointer`` names the key (`/region`). A `region` is read after the
    ///   `country`, wherever it is in the object, so it is checked against that country in either order.
    public init(jsonValue: Value) throws(ContainerError) {
        guard case .object(let map) = jsonValue else {
            throw ContainerError(.invalidStructure, "a client context must be an object, not \(jsonValue.typeName)")
        }
        self.init()
        func read(_ key: String, _ value: Value, into context: inout ClientContext) throws(ContainerError) {
            do throws(ContainerError) {
                switch value {
                case .string, .int, .double, .bool: try context.setValue(value.jsString, forKey: key)
                case .null, .undefined:
                    if key == "advertiser_id" { context.advertiserID = nil }
                    if key == "page_url" { context.pageURL = nil }
                    if key == "referrer" { context.referrer = nil }
                    if key == "cookies" { context.cookies = nil }
                default:
                    throw ContainerError(
                        .invalidStructure,
                        "context key '\(key)' needs a string, number or boolean, not \(value.typeName)"
                    )
                }
            } catch {
                var placed = error
                placed.pointer = JSONPointer.appending("", key)
                throw placed
            }
        }
        for (key, value) in Self.inSettingOrder(map, key: \.key) { try read(key, value, into: &self) }
    }

    /// `elements` (a context's keys with their values) in the order to set them: `region` after every other key,
    /// whatever the order given, since setting a country after a region would clear the region without a word (and a
    /// region outside the country given is refused either way).
    package static func inSettingOrder<Element>(_ elements: some Sequence<Element>, key: (Element) -> String)
        -> [Element]
    {
        var ordered: [Element] = []
        var regions: [Element] = []
        for element in elements {
            if key(element) == "region" { regions.append(element) } else { ordered.append(element) }
        }
        return ordered + regions
    }
}

/// Version numbers of this library.
public enum ContainerKitVersion {
    /// The library version.
    public static let version = "0.1.0"
    /// What the SDK Version built-in (`__sv`) reports.
    public static let sdkVersion = "containerkit-0.1.0"
}

/// Facts about the host, read once.
struct HostInfo: Sendable {
    var platform: String
    var language: String
    var osVersion: String
    var deviceName: String

    static let shared: HostInfo = {
        #if os(Linux)
            let platform = "Linux"
        #elseif os(macOS)
            let platform = "macOS"
        #else
            let platform = "Unknown"
        #endif
        let version = ProcessInfo.processInfo.operatingSystemVersion
        let osVersion = "\(version.majorVersion).\(version.minorVersion).\(version.patchVersion)"
        var language = "en"
        if let lang = ProcessInfo.processInfo.environment["LANG"], lang.count >= 2, lang != "C", lang != "POSIX" {
            language = String(lang.prefix { $0 != "_" && $0 != "." && $0 != "-" }).lowercased()
        }
        return HostInfo(
            platform: platform,
            language: language,
            osVersion: osVersion,
            deviceName: ProcessInfo.processInfo.hostName
        )
    }()
}

extension ClientContext {
    /// A context behind a reference, shared by the sessions that have it (see `DataLayer.State`).
    final class Box: Sendable {
        let value: ClientContext
        init(_ value: ClientContext) { self.value = value }
    }
}
