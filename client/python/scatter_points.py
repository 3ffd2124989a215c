#!/usr/bin/python3
"""Gets points from a running scatterd and prints them as CSV.

Needs Debian's python3-grpcio and python3-grpc-tools; the stubs are
generated from proto/scatter/v1/scatter.proto into a temporary directory at
start, so nothing is installed. Example:

  /usr/bin/python3 client/python/scatter_points.py --box 0,0,100,100 --spacing 2

prints "x,y,layer,id" lines (x,y,z,... for a 3D box) and a summary on stderr.
Against a scatterd that serves TLS, give --tls_ca (and --tls_cert with
--tls_key where it asks for a client certificate).
"""

import argparse
import decimal
import math
import os
import signal
import socket
import ssl
import string
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))


def is_ipv6(host):
    """Whether host is an IPv6 address; a zone ("%eth0") is gRPC's to check,
    but has no colon (in "fe80::1%eth0:50051" the port follows it)."""
    address, _, zone = host.partition("%")
    if ":" in zone:
        return False
    try:
        socket.inet_pton(socket.AF_INET6, address)
        return True
    except OSError:
        return False


def bracketed(address):
    """What a bare IPv6 address likely meant, as scatterd suggests it:
    "[::1]:PORT" for "::1", "[::1]:50051" for "::1:50051" (not an address:
    50051 is more than a group of four hex digits)."""
    if is_ipv6(address):
        return "[%s]:PORT" % address
    host, _, port = address.rpartition(":")
    if port.isdigit() and port.isascii() and is_ipv6(host):
        return "[%s]:%s" % (host, port)
    return "[HOST]:PORT"


def shortest(v):
    """v as the scatter CLI writes a coordinate (std::to_chars): the fewest
    digits that read back as v, in fixed or scientific notation, whichever
    is shorter, fixed on a tie: 5 (not Python's 5.0), 1e+05, 1e-04, 0.001."""
    # repr's digits are the shortest; it is already to_chars' text unless
    # it is scientific, nan or inf ("e", "n"), ends in ".0" (to_chars
    # writes 5, and 1e+05 for 100000), or has three zeros or more after
    # the point (where scientific can be as short or shorter). Printing
    # millions of points, the long way below was 75 % of the client's time.
    text = repr(v)
    if ("e" not in text and "n" not in text and not text.endswith(".0") and
            not text.lstrip("-").startswith("0.000")):
        return text
    if v != v:
        return "-nan" if math.copysign(1, v) < 0 else "nan"
    if v in (float("inf"), float("-inf")):
        return repr(v)
    # repr gives the shortest digits that read back as v, as to_chars does.
    sign, digits, exp = decimal.Decimal(repr(v)).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    if digits == [0]:
        exp = 0
    n = len(digits)
    text = "".join(str(d) for d in digits)
    if exp >= 0:
        # As printf's %f: the double's exact integer, not the digits
        # padded with zeros (8.248849854254471e+20 is 824884985425447092224).
        fixed = str(abs(int(v)))
    elif n + exp > 0:
        fixed = text[:n + exp] + "." + text[n + exp:]
    else:
        fixed = "0." + "0" * (-exp - n) + text
    power = exp + n - 1
    scientific = "%s%se%s%02d" % (text[0], "." + text[1:] if n > 1 else "",
                                  "-" if power < 0 else "+", abs(power))
    return ("-" if sign else "") + (fixed if len(fixed) <= len(scientific)
                                    else scientific)


# The flags that take a value which may start with "-".
VALUE_FLAGS = ("--box", "--spacing", "--seed", "--count", "--max_points",
               "--max-points", "--timeout")


def negative_values_joined(argv, options=VALUE_FLAGS):
    """argv with "--box -50,0,50,100" written as "--box=-50,0,50,100" (and
    "--spacing -1e-3", "--box -inf,..."): argparse reads a value that
    starts with "-" and is not one plain number as an option, and would say
    "expected one argument" instead of what is wrong with the value."""
    out = []
    i = 0
    while i < len(argv):
        if (argv[i] in options and i + 1 < len(argv) and
                (argv[i + 1][:2] in ["-" + c for c in "0123456789."] or
                 argv[i + 1][:4].lower() in ("-inf", "-nan"))):
            out.append(argv[i] + "=" + argv[i + 1])
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def load_stubs(proto_root=PROTO_ROOT):
    """Compiles scatter.proto with grpc_tools and imports the modules.

    The generated files live only until they are imported: the directory
    is removed before this returns."""
    from grpc_tools import protoc  # Debian: python3-grpc-tools

    with tempfile.TemporaryDirectory(prefix="scatter_stubs_") as out:
        status = protoc.main([
            "protoc", "-I" + proto_root, "--python_out=" + out,
            "--grpc_python_out=" + out,
            os.path.join(proto_root, "scatter", "v1", "scatter.proto")
        ])
        if status != 0:
            raise RuntimeError("protoc failed on scatter.proto")
        # Regular packages, so that a "scatter" package of the caller's
        # anywhere on sys.path cannot shadow them (a directory without
        # __init__.py loses to one with it, wherever it is); and the
        # caller's modules of that name are set aside while these load.
        for package in ("scatter", os.path.join("scatter", "v1")):
            open(os.path.join(out, package, "__init__.py"), "w").close()
        theirs = {name: module for name, module in sys.modules.items()
                  if name == "scatter" or name.startswith("scatter.")}
        for name in theirs:
            del sys.modules[name]
        sys.path.insert(0, out)
        try:
            from scatter.v1 import scatter_pb2, scatter_pb2_grpc
        finally:
            sys.path.remove(out)
            for name in [n for n in sys.modules
                         if n == "scatter" or n.startswith("scatter.")]:
                del sys.modules[name]
            sys.modules.update(theirs)
    return scatter_pb2, scatter_pb2_grpc


# The request fields main() fills from flags (--spacing goes to both spacing
# and cell_size, which a jittered grid uses): the server's errors name the
# field, and the user typed the flag.
FLAG_FIELDS = (("layers[0].spacing", "--spacing"),
               ("layers[0].cell_size", "--spacing"),
               ("layers[0].count", "--count"),
               ("region.box", "--box"))


# Per call round robin over every address the target resolves to (a
# headless Service's pods, or "ipv4:A,B"): gRPC's default, pick_first,
# sends every call to the first (deploy/README.md). Only over those whose
# health says SERVING: a draining scatterd keeps its connections for its
# grace period and refuses new calls.
CHANNEL_OPTIONS = (
    ("grpc.lb_policy_name", "round_robin"),
    ("grpc.service_config",
     '{"loadBalancingConfig": [{"round_robin": {}}], '
     '"healthCheckConfig": {"serviceName": "scatter.v1.ScatterService"}}'),
    # A server that froze, or a connection dropped without a word, ends the
    # call UNAVAILABLE within 40 s instead of holding it forever: pings
    # after 30 s without a frame, however long the client sends nothing
    # (scatterd takes pings 10 s apart or more).
    ("grpc.keepalive_time_ms", 30000),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
)


def open_channel(address, tls=None):
    """A channel to scatterd at address, balancing calls over every address
    it resolves to: plaintext, or TLS with `tls` a dict of PEM bytes "ca"
    (the CA that signed the server's certificate), "cert" and "key" (a
    client certificate, for a server that asks for one; or None) and
    "server_name" (the name to check the server's certificate against, or
    None for the address's host)."""
    import grpc  # Debian: python3-grpcio
    if tls is None:
        return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls["ca"], private_key=tls.get("key"),
        certificate_chain=tls.get("cert"))
    options = CHANNEL_OPTIONS
    if tls.get("server_name"):
        options += (("grpc.ssl_target_name_override", tls["server_name"]),)
    return grpc.secure_channel(address, credentials, options=options)


def read_tls(parser, args):
    """The TLS files the flags name, as open_channel takes them; None for a
    plaintext call. Refuses half a setup, as the scatter CLI does."""
    if (args.tls_cert is None) != (args.tls_key is None):
        given, missing = (("--tls_cert", "--tls_key") if args.tls_key is None
                          else ("--tls_key", "--tls_cert"))
        parser.error("--tls_cert and --tls_key go together: %s given without %s"
                     % (given, missing))
    if args.tls_ca is None:
        if args.tls_cert is not None or args.tls_server_name is not None:
            parser.error("--tls_cert, --tls_key and --tls_server_name need "
                         "--tls_ca (the CA of the server's certificate)")
        return None
    tls = {"server_name": args.tls_server_name}
    for key, flag, path in (("ca", "--tls_ca", args.tls_ca),
                            ("cert", "--tls_cert", args.tls_cert),
                            ("key", "--tls_key", args.tls_key)):
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                tls[key] = f.read()
        except OSError as e:
            parser.error("%s: cannot read %s: %s" % (flag, path, e.strerror))
        # Checked as the scatter CLI checks them: gRPC took any bytes, logged
        # its TLS errors and said "UNAVAILABLE: empty address list".
        if key in ("ca", "cert"):
            if b"-----BEGIN CERTIFICATE-----" not in tls[key]:
                parser.error("%s: %s holds no PEM CERTIFICATE block" % (flag, path))
            try:
                ssl.create_default_context(cadata=tls[key].decode("ascii", "replace"))
            except (ssl.SSLError, ValueError):
                parser.error("%s: %s holds no readable PEM certificate" % (flag, path))
        # gRPC takes no passphrase: an encrypted key is refused here, as the
        # scatter CLI refuses it ("ENCRYPTED PRIVATE KEY", or an old-style
        # "Proc-Type: 4,ENCRYPTED" header).
        if key == "key" and (not (b"-----BEGIN " in tls[key] and
                                  b"PRIVATE KEY-----" in tls[key]) or
                             b"ENCRYPTED" in tls[key]):
            parser.error("%s: %s holds no PEM private key (or one behind a "
                         "passphrase, which gRPC cannot take)" % (flag, path))
    if args.tls_cert is not None:
        # A password callback that fails, so a key behind a passphrase the
        # checks above missed never prompts on the terminal.
        def no_passphrase():
            raise ValueError("behind a passphrase")
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(
                args.tls_cert, args.tls_key, password=no_passphrase)
        except (ssl.SSLError, ValueError, OSError) as e:
            reason = getattr(e, "reason", None) or str(e)
            if reason == "KEY_VALUES_MISMATCH":
                parser.error("--tls_key: the key in %s does not belong to the "
                             "certificate in %s" % (args.tls_key, args.tls_cert))
            parser.error("--tls_cert/--tls_key: %s and %s are not a usable "
                         "certificate and key (%s)" % (args.tls_cert, args.tls_key,
                                                       reason))
    return tls


def name_flag(details):
    """A server error message with the flag the user typed in front of the
    field it names: "--spacing (layers[0].cell_size): must be > 0 ..."."""
    for field, flag in FLAG_FIELDS:
        rest = details[len(field):]
        if details.startswith(field) and rest[:1] in ("", ":", ".", "["):
            return "%s (%s)%s" % (flag, field, rest)
    return details


class Points:
    """Iterates over (dims, coords, layers, ids) per batch of one Scatter
    call; `summary` holds the call's summary once the stream has ended (it
    stays None when the stream ended without one). Leaving the loop early
    (break, an exception), cancel() or the end of a `with` block cancels
    the call, so the server stops sampling at once and frees its slot."""

    def __init__(self, stub, request, timeout):
        self._responses = stub.Scatter(request, timeout=timeout)
        self.summary = None

    def __iter__(self):
        try:
            for response in self._responses:
                if response.HasField("points"):
                    p = response.points
                    yield p.dims, list(p.coords), list(p.layer), list(p.id)
                else:
                    self.summary = response.summary
        finally:
            self.cancel()  # Nothing once the call has ended.

    def cancel(self):
        """Cancels the call; nothing when it has ended."""
        self._responses.cancel()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cancel()
        return False


def main():
    # No abbreviations, as the scatter CLI: "--max" was "ambiguous" between
    # the two spellings of --max_points.
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default="127.0.0.1:50051",
                        help="scatterd's host:port, unix:PATH, or a gRPC "
                        "target (dns:///NAME:PORT, ipv4:A:P,B:P) to balance "
                        "over (default %(default)s)")
    parser.add_argument("--box", default="0,0,100,100",
                        help="x0,y0,x1,y1 (2D) or x0,y0,z0,x1,y1,z1 (3D) "
                        "(default %(default)s)")
    parser.add_argument("--spacing", type=float, default=2.0,
                        help="dense and classic: the minimum distance between "
                        "points; jittered: the cell side; uniform: unused "
                        "(default %(default)s)")
    parser.add_argument("--method", default="dense",
                        choices=["dense", "classic", "jittered", "uniform"],
                        help="Poisson-disk dense or classic, jittered grid or "
                        "uniform (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="the same seed gives the same points "
                        "(default %(default)s)")
    parser.add_argument("--max_points", "--max-points", dest="max_points",
                        type=int, default=0,
                        help="stop after this many points (0, the default: "
                        "the server's limit)")
    parser.add_argument("--count", type=int, default=1000,
                        help="points for --method uniform (default "
                        "%(default)s)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the whole call may take (default: no "
                        "limit, as the scatter CLI; keepalive still ends a "
                        "call to a server that froze)")
    parser.add_argument("--tls_ca", metavar="FILE",
                        help="TLS: the CA (PEM) that signed the server's "
                        "certificate; without it the call is plaintext")
    parser.add_argument("--tls_cert", metavar="FILE",
                        help="TLS: a client certificate (PEM), for a server "
                        "that asks for one (with --tls_key)")
    parser.add_argument("--tls_key", metavar="FILE",
                        help="TLS: the client certificate's key (PEM)")
    parser.add_argument("--tls_server_name", metavar="NAME",
                        help="TLS: the name to check the server's certificate "
                        "against, when the address's host is not it")
    parser.add_argument("--proto_root", metavar="DIR", default=PROTO_ROOT,
                        help="the directory holding scatter/v1/scatter.proto, "
                        "for a copy of this script outside the repository "
                        "(default: the repository's proto/, %(default)s)")
    args = parser.parse_args(negative_values_joined(sys.argv[1:]))

    import grpc  # Debian: python3-grpcio
    proto = os.path.join(args.proto_root, "scatter", "v1", "scatter.proto")
    if not os.path.isfile(proto):
        parser.error("--proto_root: %s not found (a copy of this script "
                     "outside the repository needs --proto_root=REPO/proto)"
                     % proto)
    pb, pb_grpc = load_stubs(args.proto_root)
    try:
        values = [float(v) for v in args.box.split(",")]
    except ValueError:
        parser.error("--box needs 4 or 6 numbers, got %r" % args.box)
    if len(values) not in (4, 6):
        parser.error("--box needs 4 or 6 numbers")
    dims = len(values) // 2
    if not 1 <= args.count < 2**64:
        parser.error("--count must be in [1, 2^64)")
    if not 0 <= args.seed < 2**64:
        parser.error("--seed must be in [0, 2^64)")
    if not 0 <= args.max_points < 2**64:
        parser.error("--max_points must be in [0, 2^64)")
    # gRPC's deadline is a time since the epoch in 64-bit nanoseconds: one
    # past about 2^63 ns (292 years) wraps, and fails the call at once.
    if args.timeout is not None and not 0 < args.timeout <= 1e9:
        parser.error("--timeout must be > 0 s and at most 1e9 s (31 years), "
                     "got %r" % args.timeout)
    # gRPC reads an IPv6 address without brackets ("::1") as a host with no
    # port, whatever follows its last colon. A target with a scheme
    # ("dns:///", "ipv4:") has a slash, brackets or letters past hex first.
    first = args.address.partition(":")[0]
    if (args.address.count(":") >= 2 and not set("[]/") & set(args.address) and
            len(first) <= 4 and all(c in string.hexdigits for c in first)):
        parser.error("--address must be host:port with an IPv6 host in brackets, "
                     "as %s, got %r, which gRPC reads as a host without a port"
                     % (bracketed(args.address), args.address))
    # gRPC dials an IPv6 host in brackets or an IPv4 address without a
    # port on port 0 (a hostname on 443), and fails on an empty target with
    # a log of its own.
    host = args.address
    for scheme in ("dns:///", "ipv4:"):
        if host.startswith(scheme):
            host = host[len(scheme):]
            break
    try:
        socket.inet_pton(socket.AF_INET, host)
        bare_ipv4 = True
    except OSError:
        bare_ipv4 = False
    if not args.address or args.address.endswith("]") or bare_ipv4:
        parser.error("--address must be host:port with a port in [0, 65535] "
                     "or unix:PATH, got %r%s" %
                     (args.address, ", which gRPC dials on port 0" if args.address else ""))
    # gRPC reads a port past 65535 modulo 2^16 (99999 would dial 34463) and
    # an empty one as 0; each address of an "ipv4:A:P,B:P" list has its own.
    if not args.address.startswith(("unix:", "unix-abstract:")):
        for entry in host.split(",") if args.address.startswith("ipv4:") else [host]:
            _, colon, port = entry.rpartition(":")
            if not colon or entry.endswith("]"):
                continue  # No port: refused above, or a name (gRPC: 443).
            if port == "" or (all(c in "0123456789" for c in port) and
                              (len(port) > 5 or int(port) > 65535)):
                parser.error("--address must be host:port with a port in "
                             "[0, 65535] or unix:PATH, got %r%s" %
                             (args.address, ", with no port after the colon"
                              if port == "" else ""))
    request = pb.ScatterRequest(seed=args.seed, max_points=args.max_points)
    request.region.box.min.extend(values[:dims])
    request.region.box.max.extend(values[dims:])
    method = {"dense": pb.METHOD_POISSON_DENSE, "classic": pb.METHOD_POISSON_CLASSIC,
              "jittered": pb.METHOD_JITTERED_GRID, "uniform": pb.METHOD_UNIFORM}[args.method]
    request.layers.add(id=0, method=method, spacing=args.spacing,
                       cell_size=args.spacing, count=args.count)
    # Only what is printed travels: radius, yaw and scale were half the bytes.
    request.fields.omit_radius = True
    request.fields.omit_yaw = True
    request.fields.omit_scale = True

    tls = read_tls(parser, args)
    with open_channel(args.address, tls) as channel:
        stub = pb_grpc.ScatterServiceStub(channel)
        out = sys.stdout
        points = Points(stub, request, args.timeout)
        written = 0
        try:
            for d, coords, layers, ids in points:
                for i in range(len(ids)):
                    xyz = ",".join(shortest(c) for c in coords[i * d:(i + 1) * d])
                    out.write("%s,%d,%d\n" % (xyz, layers[i], ids[i]))
                written += len(ids)
        except grpc.RpcError as e:
            # --max_points is the request's own cap: reaching it is what
            # was asked for, and the stream ends there without a summary.
            if (args.max_points > 0 and written == args.max_points and
                    e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and
                    "(the request's own)" in (e.details() or "")):
                print("summary: %d points, the --max_points cap" % written,
                      file=sys.stderr)
                return 0
            # As the scatter CLI hints: a plaintext client at a TLS server
            # hears only "Socket closed"; a refused connection, a name that
            # does not resolve or a server draining is not about TLS.
            hint = ""
            if (written == 0 and e.code() == grpc.StatusCode.UNAVAILABLE and
                    "Socket closed" in (e.details() or "")):
                if tls is None:
                    hint = " (if scatterd serves TLS, give --tls_ca)"
                elif not args.tls_cert:
                    hint = (" (if scatterd asks for a client certificate, "
                            "give --tls_cert and --tls_key)")
            details = name_flag(e.details() or "")
            if (e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and
                    details == "Deadline Exceeded"):
                # gRPC's own words: the client's deadline, not the server's
                # max_call_duration, which says so itself. With no point
                # yet, a larger --timeout may not help: the server may be
                # stuck.
                details = ("--timeout=%g s passed waiting for scatterd at %s "
                           "after %d points%s" %
                           (args.timeout, args.address, written,
                            " (give a larger --timeout)" if written else ""))
            elif e.code() == grpc.StatusCode.UNAVAILABLE and written > 0:
                # Points had come: the connection went (the server died,
                # froze past keepalive, or drained), not the address.
                details = ("lost the connection to scatterd at %s: %s after "
                           "%d points" % (args.address, details, written))
            print("scatter: %s: %s%s" % (e.code().name, details, hint),
                  file=sys.stderr)
            return 1
        s = points.summary
        if s is None:
            print("scatter: the stream ended without its summary after %d "
                  "points (a proxy between, or not a scatterd?)" % written,
                  file=sys.stderr)
            return 1
        print("summary: %d points, %.3f s, algorithm_version %d" %
              (s.total_points, s.elapsed_seconds, s.algorithm_version), file=sys.stderr)
    return 0


def run():
    """main(), ending quietly when the reader of stdout goes away (`| head`)."""
    # Ctrl-C ends the process as it ends other commands (the status says
    # SIGINT), not with a KeyboardInterrupt traceback from wherever the
    # loop was.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # gRPC's own log lines (a failed TLS handshake, an unreachable backend)
    # repeat the one-line error below in its own words: off, unless asked.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    # Python sets sys.stdout to None when descriptor 1 is closed (`>&-`).
    if sys.stdout is None:
        print("scatter: cannot write the points: stdout is closed",
              file=sys.stderr)
        return 1
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # As the Python docs advise (signal, "Note on SIGPIPE"): no
        # traceback, and stdout pointed at devnull so that the flush at exit
        # fails no more. The status is that of a command killed by SIGPIPE.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as e:
        # A full disk (/dev/full: ENOSPC) or another write error on stdout:
        # one line, as the scatter CLI says it, and stdout pointed at
        # devnull so that the flush at exit does not fail again.
        print("scatter: cannot write the points to stdout: %s" %
              (e.strerror or e), file=sys.stderr)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(run())
