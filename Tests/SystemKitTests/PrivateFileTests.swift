import Glibc
import Testing

import SystemKit

@Suite struct PrivateFileTests {
    @Test func replaceWritesA0600FileAndLeavesNoTemporary() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/a/b/secret"
        try PrivateFile.replace(path, with: Array("first\n".utf8))
        #expect(mode(of: path) == 0o600)
        #expect(mode(of: directory.path + "/a") == 0o700)
        #expect(mode(of: directory.path + "/a/b") == 0o700)
        try PrivateFile.replace(path, with: Array("second\n".utf8))
        #expect(try PrivateFile.read(path, limit: 64) == Array("second\n".utf8))
        #expect(entries(of: directory.path + "/a/b") == ["secret"])
    }

    @Test func replaceSwapsASymbolicLinkInsteadOfWritingThroughIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let target = directory.path + "/target"
        writePlainFile(target, "untouched", permissions: 0o600)
        symlink(target, directory.path + "/link")
        try PrivateFile.replace(directory.path + "/link", with: [1])
        #expect(try PrivateFile.read(target, limit: 64) == Array("untouched".utf8))
        #expect(try PrivateFile.read(directory.path + "/link", limit: 64) == [1])
    }

    @Test func replaceRefusesADirectoryAndAPathWithoutAName() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        mkdir(directory.path + "/dir", 0o700)
        #expect(throws: PrivateFileError.notRegularFile) { try PrivateFile.replace(directory.path + "/dir", with: [1]) }
        #expect(throws: PrivateFileError.notRegularFile) { try PrivateFile.replace(directory.path + "/x/", with: [1]) }
        #expect(entries(of: directory.path) == ["dir"])
    }

    @Test func createOnceWinsOnlyWhenNothingIsThere() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/key"
        #expect(try PrivateFile.createOnce(path, with: [1, 2]))
        #expect(try !PrivateFile.createOnce(path, with: [3]))
        #expect(try PrivateFile.read(path, limit: 8) == [1, 2])
        #expect(mode(of: path) == 0o600)
        #expect(entries(of: directory.path) == ["key"])
    }

    @Test func readReportsEachKindOfUnsafeFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let base = directory.path
        #expect(throws: PrivateFileError.notFound) { try PrivateFile.read(base + "/missing", limit: 8) }
        writePlainFile(base + "/open", "x", permissions: 0o644)
        #expect(throws: PrivateFileError.insecureMode(0o644)) { try PrivateFile.read(base + "/open", limit: 8) }
        symlink(base + "/open", base + "/link")
        #expect(throws: PrivateFileError.symlink) { try PrivateFile.read(base + "/link", limit: 8) }
        // A FIFO where the file belongs: refused without waiting for a writer.
        #expect(mkfifo(base + "/fifo", 0o600) == 0)
        #expect(throws: PrivateFileError.notRegularFile) { try PrivateFile.read(base + "/fifo", limit: 8) }
        #expect(throws: PrivateFileError.notRegularFile) { try PrivateFile.inspect(base + "/fifo") }
        #expect(throws: PrivateFileError.symlink) { try PrivateFile.inspect(base + "/link") }
        #expect(try PrivateFile.inspect(base + "/missing") == nil)
    }

    @Test func readAcceptsTheLimitAndRefusesOneByteMore() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/f"
        writePlainFile(path, "12345678", permissions: 0o600)
        #expect(try PrivateFile.read(path, limit: 8) == Array("12345678".utf8))
        #expect(throws: PrivateFileError.tooLarge(8)) { try PrivateFile.read(path, limit: 7) }
    }

    @Test func explanationsKeepTheirWording() {
        let path = "/x/secret"
        #expect(PrivateFileError.insecureMode(0o644).explanation(for: path, what: "discovery secret")
            == "/x/secret has mode 0644, so group or others can access the discovery secret; it must be 0600 (chmod 600 /x/secret)")
        #expect(PrivateFileError.system(SystemError("rename", path: path, errno: ENOSPC)).explanation(for: path, what: "x")
            == "rename /x/secret: No space left on device (errno 28)")
    }

    @Test func createExclusiveMakesA0600FileAndRefusesAnExistingEntry() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/new"
        let fd = try PrivateFile.createExclusive(path)
        FileDescriptor.close(fd)
        #expect(mode(of: path) == 0o600)
        let error = #expect(throws: SystemError.self) { try PrivateFile.createExclusive(path) }
        #expect(error == SystemError("create", path: path, errno: EEXIST))
    }
}
