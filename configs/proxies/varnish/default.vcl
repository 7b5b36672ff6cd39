vcl 4.1;
# Varnish as a proxy under test. It sends origin-form requests (path + Host), so its backend is
# its Collector port in accelerator mode; the builtin VCL does the caching.
backend collector {
    .host = "{{gateway}}";
    .port = "{{collector_port}}";
}
