import Foundation

/// A fresh private directory (mode 0700) under the system's temporary directory, for one test's
/// files; ``remove()`` deletes it.
public struct TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    /// Creates the directory (``ToolProcess/makeTemporaryDirectory()``). Throws Foundation's error
    /// when it cannot be created.
    public init() throws {
        path = try ToolProcess.makeTemporaryDirectory()
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Removes the directory and everything in it; never throws.
    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}
