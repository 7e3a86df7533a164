import Foundation

/// What the built-in macros know about the client a session runs for: platform, language, app and device.
///
/// A Linux service serves many end users, so each ``DataLayer`` carries its own context; fields the
/// service does not know default to the host's values (``ClientContext/host``).
public struct ClientContext: Sendable, Hashable {
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

    /// Creates a context; every field defaults to the host's value.
    public init(
        platform: String? = nil,
        language: String? = nil,
        osVersion: String? = nil,
        appID: String = "",
        appName: String = "",
        appVersionCode: String = "",
        appVersionName: String = "",
        sdkVersion: String = ContainerKitVersion.sdkVersion,
        deviceName: String? = nil,
        resolution: String = "",
        advertisingTrackingEnabled: Bool = false,
        advertiserID: String? = nil
    ) {
        let host = HostInfo.shared
        self.platform = platform ?? host.platform
        self.language = language ?? host.language
        self.osVersion = osVersion ?? host.osVersion
        self.appID = appID
        self.appName = appName
        self.appVersionCode = appVersionCode
        self.appVersionName = appVersionName
        self.sdkVersion = sdkVersion
        self.deviceName = deviceName ?? host.deviceName
        self.resolution = resolution
        self.advertisingTrackingEnabled = advertisingTrackingEnabled
        self.advertiserID = advertiserID
    }

    /// The context of the machine ContainerKit runs on.
    public static var host: ClientContext { ClientContext() }

    /// The keys ``setValue(_:forKey:)`` accepts, as the CLI's `--context key=value` spells them.
    public static let keys: [String] = [
        "platform", "language", "os_version", "app_id", "app_name", "app_version_code", "app_version_name",
        "sdk_version", "device_name", "resolution", "advertising_tracking_enabled", "advertiser_id",
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
