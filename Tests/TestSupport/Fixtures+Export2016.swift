extension Fixtures {
    /// A hand-written GTM export of format 1.3 (2016, the GTM API v1 resource model) of an Android container:
    /// its enabled built-in variables are a list of v1 type names in `container.enabledBuiltInVariable`, with no
    /// `builtInVariable` list. The tag calls class path `t` with the app id; its trigger tests `{{Event}}`.
    public static let mobileExport2016 = #"""
        {
          "exportFormatVersion": 1.3,
          "exportTime": "2016-05-12 10:05:31",
          "containerVersion": {
            "accountId": "1000001",
            "containerId": "2000002",
            "containerVersionId": "7",
            "container": {
              "accountId": "1000001",
              "containerId": "2000002",
              "name": "Shop app",
              "publicId": "GTM-OLD16",
              "usageContext": ["ANDROID"],
              "enabledBuiltInVariable": ["event", "appId", "containerVersion", "sdkVersion"]
            },
            "tag": [{
              "accountId": "1000001", "containerId": "2000002", "tagId": "1", "name": "Purchase call", "type": "funct",
              "parameter": [
                {"type": "TEMPLATE", "key": "classPath", "value": "t"},
                {"type": "LIST", "key": "functionArgument", "list": [
                  {"type": "MAP", "map": [{"type": "TEMPLATE", "key": "key", "value": "app"},
                                          {"type": "TEMPLATE", "key": "value", "value": "{{App ID}}"}]},
                  {"type": "MAP", "map": [{"type": "TEMPLATE", "key": "key", "value": "version"},
                                          {"type": "TEMPLATE", "key": "value", "value": "{{Container Version}}"}]}
                ]}
              ],
              "firingTriggerId": ["3"]
            }],
            "trigger": [{
              "accountId": "1000001", "containerId": "2000002", "triggerId": "3", "name": "Purchase",
              "type": "CUSTOM_EVENT",
              "customEventFilter": [{"type": "EQUALS", "parameter": [
                {"type": "TEMPLATE", "key": "arg0", "value": "{{Event}}"},
                {"type": "TEMPLATE", "key": "arg1", "value": "purchase"}
              ]}]
            }]
          }
        }
        """#
}
