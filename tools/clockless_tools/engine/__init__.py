"""The container engine `sam local` runs the functions in, and the runtime image it runs them on.

`dockerd.py` finds a reachable Docker (the user's own: `DOCKER_HOST`, or /var/run/docker.sock) or
brings up the project's own (Debian's dockerd as root, on a socket, data root and exec root of its
own, that can never pull: `clockless engine up|down|status`). `runtime_image.py` builds the
stand-in python3.13 Lambda runtime image from Debian packages and a hashed requirements file
(`clockless engine image`), cached by the hash of what it is built from. `sam_local.py` holds a
`sam local start-lambda` / `start-api` server open until it listens (`clockless engine measure` and
the container tests). None pulls an image:
docs/running-locally.md, "sam local invoke (with Docker)".
"""
