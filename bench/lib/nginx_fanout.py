"""The nginx fan-outs the Multiplier is measured against (throughput, cpu_breakdown): nginx `mirror` and an
nginx Lua fan-out (`capture_multi` to a reference and N upstreams over keep-alive, `ngx.md5` of every body),
as nginx configuration text."""

from __future__ import annotations

from pathlib import Path

from spe_tools.config_template import render_text

LUA_MODULES = ("/usr/lib/nginx/modules/ndk_http_module.so", "/usr/lib/nginx/modules/ngx_http_lua_module.so")

NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log warn;
worker_rlimit_nofile 65536;
{{modules}}
events { worker_connections 16384; }
http {
    access_log off;
    tcp_nodelay on;
    keepalive_timeout 120s; keepalive_requests 10000000;
    client_body_temp_path {{dir}}/tmp; proxy_temp_path {{dir}}/tmp; fastcgi_temp_path {{dir}}/tmp;
    uwsgi_temp_path {{dir}}/tmp; scgi_temp_path {{dir}}/tmp;
{{body}}
}
"""

UPSTREAMS = """\
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering on; proxy_buffer_size 16k; proxy_buffers 8 16k;
{{upstreams}}
"""

LUA_INIT = """\
    init_by_lua_block {
        local capture_multi, md5 = ngx.location.capture_multi, ngx.md5
        function fanout()
            local n = tonumber(ngx.var.fan)
            local uri = ngx.var.request_uri
            local reqs = { { "/_ref" .. uri } }
            for i = 1, n do reqs[i + 1] = { "/_m" .. i .. uri } end
            local res = { capture_multi(reqs) }
            local ref = res[1]
            local refh = md5(ref.body)
            local diff = 0
            for i = 2, n + 1 do
                if res[i].status ~= ref.status or md5(res[i].body) ~= refh then diff = diff + 1 end
            end
            ngx.status = ref.status
            ngx.header["Content-Type"] = ref.header["Content-Type"]
            ngx.header["Content-Length"] = #ref.body
            ngx.header["X-Fanout-Diff"] = diff
            ngx.print(ref.body)
        end
    }
"""


def upstream_blocks(ports: list[int]) -> str:
    """keepalive upstream `ref` (ports[0]) and m1..mN (ports[1:])."""
    names = ["ref"] + [f"m{i}" for i in range(1, len(ports))]
    return "\n".join(f"    upstream {n} {{ server 127.0.0.1:{p}; keepalive 512; keepalive_requests 10000000; "
                     f"keepalive_timeout 120s; }}" for n, p in zip(names, ports, strict=True))


def mirror_server(port: int, n: int) -> str:
    mirrors = " ".join(f"mirror /_m{i};" for i in range(1, n + 1))
    internal = "\n".join(f"        location = /_m{i} {{ internal; proxy_pass http://m{i}$request_uri; }}"
                         for i in range(1, n + 1))
    return (f"    server {{\n        listen 127.0.0.1:{port} backlog=4096;\n"
            f"        location / {{ {mirrors} mirror_request_body off; proxy_pass http://ref; }}\n{internal}\n    }}")


def lua_server(port: int, n: int) -> str:
    internal = "\n".join(f"        location ^~ /_m{i}/ {{ internal; proxy_pass http://m{i}/; }}"
                         for i in range(1, n + 1))
    return (f"    server {{\n        listen 127.0.0.1:{port} backlog=4096;\n"
            f"        location / {{ set $fan {n}; content_by_lua_block {{ fanout() }} }}\n"
            f"        location ^~ /_ref/ {{ internal; proxy_pass http://ref/; }}\n{internal}\n    }}")


def nginx_conf(directory: Path, body: str, lua: bool = False) -> str:
    modules = "\n".join(f"load_module {m};" for m in LUA_MODULES) if lua else ""
    return render_text(NGINX_CONF, {"dir": directory, "modules": modules, "body": body})
