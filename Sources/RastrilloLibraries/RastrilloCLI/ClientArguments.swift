import CommandLineKit
import ToolSpecs
import Glibc
import RastrilloCore
import RastrilloHTTP
import SystemKit

/// What the HTTP tools' shared options say: the origin and target of the URL, the header
/// fields, the credential and the CA file.
public struct ClientArguments {
    /// The URL's origin.
    public let origin: NativeOrigin
    /// The URL's path and query.
    public let target: String
    /// The `--header` fields, in order.
    public let headers: [NativeHeaderField]
    /// The credential from `--credential-file` or `--credential-env`, if either was given.
    public let credential: NativeCredential?
    /// `--cacert`.
    public let caFile: String?
    /// Where the credential came from, so a long-running tool can read it again.
    public let credentialSource: CredentialSource?
    /// `--credential-header`.
    public let credentialHeader: String?
    /// `--connect-timeout`, 30 s by default.
    public let connectTimeout: Duration
    /// `--stall-timeout`, 60 s by default; nil when it is 0 (no limit).
    public let stallTimeout: Duration?
    /// `--min-rate`, 100 bytes per second over each stall-timeout window by default; nil when
    /// it is 0 (no limit).
    public let minimumRate: Int?
    /// The HTTP proxy the tool reaches ``origin`` through, or nil when it connects directly:
    /// `--proxy` (`''` for none), else `https_proxy`/`HTTPS_PROXY` (https) or `http_proxy`
    /// (http), else `all_proxy`/`ALL_PROXY`; unless `--noproxy` (or, without it,
    /// `no_proxy`/`NO_PROXY`) excludes the origin's host. See ``ProxySelection``.
    public let proxy: ProxyRoute?
    /// The environment credentials are read from; nil for the process's own, read by name.
    private let environment: [String: String]?

    /// Reads `url` (the tool's URL argument) and the shared options of `arguments`
    /// (`ToolSpecs.HTTP`, with their defaults); `--credential-env` reads `environment`, or the
    /// process's own environment when nil.
    ///
    /// - Throws: `UsageError` for a URL that is not an absolute http(s) URL, a malformed header
    ///   or `--credential-header` without a credential; `LocalFailure` for a credential that
    ///   cannot be read or used (the message never quotes it).
    public init(_ arguments: ParsedArguments, url: String, environment: [String: String]? = nil)
        throws
    {
        do {
            (origin, target) = try NativeOrigin.split(url)
        } catch {
            throw UsageError("URL: \(error.message)", argument: url)
        }
        headers = try arguments[ToolSpecs.HTTP.header].map(Self.header)
        let headerName = arguments[ToolSpecs.HTTP.credentialHeader]
        if let headerName, let reason = Self.refusal(ofHeaderName: headerName) {
            throw UsageError("--credential-header: \(headerName) \(reason)", argument: headerName)
        }
        self.environment = environment
        credentialHeader = headerName
        if let path = arguments[ToolSpecs.HTTP.credentialFile] {
            credentialSource = .file(path)
        } else if let name = arguments[ToolSpecs.HTTP.credentialEnv] {
            credentialSource = .environment(name)
        } else {
            if headerName != nil {
                throw UsageError("--credential-header needs --credential-file or --credential-env", argument: headerName)
            }
            credentialSource = nil
        }
        credential = try credentialSource?.load(headerName: headerName, environment: environment)
        caFile = arguments[ToolSpecs.HTTP.cacert]
        if let caFile {
            // libcurl would open it blocking, on the transfer's thread: a FIFO must not hold the
            // tool there.
            try Self.checkCertificates(in: caFile)
        }
        do {
            proxy = try ProxySelection.route(
                for: origin, proxyOption: arguments[ToolSpecs.HTTP.proxy], noProxyOption: arguments[ToolSpecs.HTTP.noproxy],
                environment: { name in environment.map { $0[name] } ?? ProcessEnvironment.value(name) })
        } catch {
            throw UsageError(error.message)
        }
        if let proxy, origin.scheme != "https" {
            // A plain-http request goes to the proxy whole: a credential would cross it in the
            // clear, whether from --credential-* or a hand-made header.
            let handMade = headers.first { ["authorization", "cookie"].contains($0.name.lowercased()) }
            if credential != nil || handMade != nil {
                let what = handMade.map { "the \($0.name) header" } ?? "the credential"
                throw UsageError(
                    "refusing to send \(what) in the clear through the proxy \(proxy) (from \(proxy.source)): "
                        + "use an https URL, or reach \(origin.host) directly with --noproxy \(origin.host)")
            }
        }
        connectTimeout = .seconds(arguments[ToolSpecs.HTTP.connectTimeout])
        let stall = arguments[ToolSpecs.HTTP.stallTimeout]
        stallTimeout = stall == 0 ? nil : .seconds(stall)
        let rate = arguments[ToolSpecs.HTTP.minRate]
        minimumRate = rate == 0 ? nil : rate
    }

    /// The most a `--cacert` file may hold: 16 MiB (the system's whole bundle is about 200 KiB).
    static let maxCAFileBytes = 16 << 20

    /// Refuses a `--cacert` file that is not a regular file or holds no PEM certificate, as a
    /// local failure (exit 1) before any I/O, like a missing one: libcurl would report it only
    /// at the TLS handshake, as a failure of the connection.
    /// - Throws: `LocalFailure`.
    static func checkCertificates(in path: String) throws {
        let descriptor = try RegularFile.open(path, what: "the CA file", followingLinks: true)
        defer { Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw LocalFailure("cannot read the CA file \(path): \(String(cString: strerror(errno)))")
        }
        // One byte past the size the file has now, or past the bound, shows growth or excess.
        var bytes = [UInt8](repeating: 0, count: min(Int(max(status.st_size, 0)), maxCAFileBytes) + 1)
        let count: Int
        switch bytes.withUnsafeMutableBytes({ raw in Result { () throws(SystemError) in try FileDescriptor.readFully(descriptor, into: raw) } }) {
        case .success(let read): count = read
        case .failure(let error): throw LocalFailure("cannot read the CA file \(path): \(error.reason)")
        }
        guard count <= maxCAFileBytes else {
            throw LocalFailure("the CA file \(path) is larger than 16 MiB")
        }
        guard PEMCertificates.containsCertificate(bytes[..<count]) else {
            throw LocalFailure(
                "the CA file \(path) holds no certificate: it needs at least one PEM block "
                    + "(-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)")
        }
    }

    /// The credential read again from its source (the file as it is now), or nil without one.
    /// - Throws: what ``CredentialSource/load(headerName:environment:)`` throws.
    public func reloadCredential() throws -> NativeCredential? {
        try credentialSource?.load(headerName: credentialHeader, environment: environment)
    }

    /// The client these options describe.
    /// - Parameter interruptDescriptor: when set, transfers run on the calling thread and stop
    ///   once it is readable (`ToolRunner.interruptDescriptor`, for a tool on the calling-thread
    ///   executor); nil for a thread per transfer.
    public func client(interruptDescriptor: Int32? = nil) -> NativeHTTP {
        client(credential: credential, interruptDescriptor: interruptDescriptor)
    }

    /// A client of the origin with `credential` and `observer`, and the options' CA file and
    /// timeouts. A tool's requests all go to this one origin, so over plain http OpenSSL is
    /// initialised without the start-up work only TLS uses (``NativeHTTP/skipTLSStartupIfPlain()``:
    /// bench/fetch, bench/download and bench/stream measure it); an https origin is untouched.
    /// - Parameters:
    ///   - interruptDescriptor: as for ``client(interruptDescriptor:)``.
    ///   - streamIdleTimeout: how long an open event stream may stay quiet (`--idle-timeout`);
    ///     nil for no limit.
    public func client(
        credential: NativeCredential?, observer: NativeTrafficObserver? = nil, interruptDescriptor: Int32? = nil,
        streamIdleTimeout: Duration? = nil
    ) -> NativeHTTP {
        let http = NativeHTTP(
            origin: origin, credential: credential, observer: observer,
            options: NativeHTTP.Options(
                caFile: caFile, connectTimeout: connectTimeout, stallTimeout: stallTimeout, minimumRate: minimumRate,
                streamIdleTimeout: streamIdleTimeout, transfersOnCallingThread: interruptDescriptor != nil,
                cancelDescriptor: interruptDescriptor, proxy: proxy))
        http.skipTLSStartupIfPlain()
        return http
    }

    /// Says once on standard error which proxy the run goes through, when it uses one:
    /// `TOOL: note: via proxy http://host:port (from VARIABLE)` (the credential shown as `***`),
    /// or with `json`, one JSON line `{"notice":"proxy","proxy":URL,"source":VARIABLE}`.
    public func announceProxy(json: Bool) {
        guard let proxy else { return }
        if json {
            struct Notice: Encodable {
                let notice = "proxy"
                let proxy: String
                let source: String
            }
            if let line = try? JSONOutput.line(Notice(proxy: proxy.redacted, source: proxy.source)) {
                try? OutputChannel.standardError.write(line)
            }
        } else {
            Diagnostics.note("via proxy \(proxy.redacted) (from \(proxy.source))")
        }
    }

    /// `NAME: VALUE` (or `NAME:VALUE`) as a header field.
    /// - Throws: `UsageError` when there is no colon, the name is not a token, the value holds a
    ///   control character, or the header decides the framing (`Content-Length`,
    ///   `Transfer-Encoding`).
    public static func header(_ text: String) throws -> NativeHeaderField {
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError("--header: '\(text)' is not NAME: VALUE", argument: text)
        }
        let name = String(text[..<colon])
        let value = trimmingSpacesAndTabs(text[text.index(after: colon)...])
        if let reason = refusal(ofHeaderName: name) {
            throw UsageError("--header: \(name) \(reason)", argument: text)
        }
        do {
            return try NativeHeaderField(name: name, value: value)
        } catch {
            throw UsageError("--header: \(error.message)", argument: name)
        }
    }

    /// Why a header named `name` may not be set by hand (with `--header` or as the credential's
    /// header), or nil when it may: the framing headers come from the request body, `Host` from
    /// the URL's origin, and the hop-by-hop headers belong to the connection, which libcurl
    /// manages.
    public static func refusal(ofHeaderName name: String) -> String? {
        switch name.lowercased() {
        case "content-length", "transfer-encoding": "is set from the request body, not by hand"
        case "host": "is set from the URL's origin, not by hand"
        case "connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade":
            "is a hop-by-hop header of the connection, which is never set by hand"
        default: nil
        }
    }

    /// `text` without the spaces and tabs (Unicode scalars U+0020 and U+0009) at either end.
    static func trimmingSpacesAndTabs(_ text: Substring) -> String {
        let scalars = text.unicodeScalars
        let isBlank: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
            let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(Substring(scalars[first...last]))
    }
}

/// Where a credential comes from: never the command line, where `ps` would show it.
public enum CredentialSource: Equatable {
    /// A file only its owner may read or write (no group or other permission bits).
    case file(String)
    /// An environment variable, by name.
    case environment(String)

    /// The credential, sent as `Authorization: Bearer TOKEN`, or as the whole value of
    /// `headerName` when given.
    ///
    /// A file must be a regular file of at most 16 KiB with no permission for group or others;
    /// one trailing newline (LF or CRLF) is dropped. A variable is read from `environment`, or
    /// from the process's own environment when nil.
    /// - Throws: `LocalFailure` naming the file or variable and what is wrong, never the
    ///   credential; `UsageError` for a `headerName` that is not a header name.
    public func load(headerName: String?, environment: [String: String]? = nil) throws -> NativeCredential {
        let token: String
        let origin: String
        switch self {
        case .file(let path):
            token = try Self.read(path)
            origin = "the credential file \(path)"
        case .environment(let name):
            let value: String?
            if let environment {
                value = environment[name]
            } else {
                value = ProcessEnvironment.value(name)
            }
            guard let value else {
                throw LocalFailure("the credential variable \(name) is not set")
            }
            token = value
            origin = "the credential variable \(name)"
        }
        do {
            if let headerName {
                guard (try? NativeHeaderField(name: headerName, value: "")) != nil else {
                    throw UsageError("--credential-header: '\(headerName)' is not a header name", argument: headerName)
                }
                return try NativeCredential.header(headerName, token: token)
            }
            return try NativeCredential.bearer(token)
        } catch let error as NativeClientError {
            throw LocalFailure("\(origin) is unusable: \(error.message)")
        }
    }

    private static func read(_ path: String) throws -> String {
        let descriptor = try RegularFile.open(path, what: "the credential file", followingLinks: false)
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw LocalFailure("cannot read the credential file \(path): \(String(cString: strerror(errno)))")
        }
        let permissions = status.st_mode & 0o777
        guard permissions & 0o077 == 0 else {
            throw LocalFailure(
                "the credential file \(path) is open to group or others (mode \(String(permissions, radix: 8))); "
                    + "make it private with 'chmod 600 \(path)'")
        }
        var bytes = [UInt8](repeating: 0, count: 16_385)
        let count: Int
        switch bytes.withUnsafeMutableBytes({ raw in Result { () throws(SystemError) in try FileDescriptor.readFully(descriptor, into: raw) } }) {
        case .success(let read): count = read
        case .failure(let error): throw LocalFailure("cannot read the credential file \(path): \(error.reason)")
        }
        guard count <= 16_384 else { throw LocalFailure("the credential file \(path) is larger than 16 KiB") }
        var content = Array(bytes[..<count])
        if content.last == UInt8(ascii: "\n") {
            content.removeLast()
            if content.last == UInt8(ascii: "\r") { content.removeLast() }
        }
        guard let text = String(validating: content, as: UTF8.self) else {
            throw LocalFailure("the credential file \(path) is not UTF-8 text")
        }
        return text
    }
}

/// Opening a file the tools only read (a credential, a CA file) without ever blocking: a FIFO,
/// a device or a socket at that path is refused instead of waited on.
enum RegularFile {
    /// A read-only, close-on-exec descriptor of the regular file at `path`, opened with
    /// `O_NONBLOCK` (a FIFO without a writer would block `open(2)` forever, where no signal
    /// stops it) and, unless `followingLinks`, `O_NOFOLLOW`; then `fstat`ed.
    /// - Parameter what: the file's role in messages (`the credential file`).
    /// - Throws: `LocalFailure` when it cannot be opened or is not a regular file.
    static func open(_ path: String, what: String, followingLinks: Bool) throws -> Int32 {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW)
        let descriptor = Glibc.open(path, flags)
        guard descriptor >= 0 else {
            if errno == ELOOP, !followingLinks {
                throw LocalFailure("\(what) \(path) is a symbolic link, which is not followed; name the file itself")
            }
            throw LocalFailure("cannot open \(what) \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw LocalFailure("cannot read \(what) \(path): \(reason)")
        }
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG else {
            Glibc.close(descriptor)
            let kind =
                switch type {
                case S_IFIFO: "a FIFO"
                case S_IFDIR: "a directory"
                case S_IFSOCK: "a socket"
                case S_IFCHR, S_IFBLK: "a device"
                default: "not a regular file"
                }
            throw LocalFailure("\(what) \(path) is \(kind == "not a regular file" ? kind : kind + ", not a regular file")")
        }
        // Reads of a regular file never block; clear the flag all the same.
        _ = fcntl(descriptor, F_SETFL, 0)
        return descriptor
    }
}

