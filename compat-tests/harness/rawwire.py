"""Raw Kafka frames over a socket, for the differential scripts that compare Shale's and Apache
Kafka's answers byte for byte (sasl_plain.py, sasl_oauthbearer.py, sasl_scram.py): requests
with header v1 or v2, responses read whole, SaslHandshake v1 and ApiVersions."""

import socket
import struct

WAIT_S = 10.0


def string(s):
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def request(api_key, version, correlation_id, body, flexible=False, client_id="sasl-check"):
    # Header v1 (non-flexible) or v2 (flexible: empty tagged fields after the client id).
    header = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id)
    if flexible:
        header += b"\x00"
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def read_frame(sock):
    """The response body after its correlation id, or None when the connection closed."""
    try:
        head = sock.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        (length,) = struct.unpack(">i", head)
        data = b""
        while len(data) < length:
            chunk = sock.recv(length - len(data))
            if not chunk:
                return None
            data += chunk
        return data[4:]
    except OSError:
        return None


def closed(sock):
    try:
        return sock.recv(1) == b""
    except OSError:
        return True


def handshake(sock, mechanism):
    """SaslHandshake v1: (error code, enabled mechanisms)."""
    sock.sendall(request(17, 1, 1, string(mechanism)))
    body = read_frame(sock)
    (error,) = struct.unpack(">h", body[:2])
    (count,) = struct.unpack(">i", body[2:6])
    pos, names = 6, []
    for _ in range(count):
        (n,) = struct.unpack(">h", body[pos:pos + 2])
        names.append(body[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    return error, sorted(names)


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.settimeout(WAIT_S)
    return sock


def api_versions_answered(sock):
    sock.sendall(request(18, 0, 3, b""))
    return read_frame(sock) is not None
