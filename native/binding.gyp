{
  "variables": {
    "have_isal%": "<!(test -e /usr/include/isa-l.h && echo 1 || echo 0)"
  },
  "targets": [
    {
      "target_name": "roce_native",
      "sources": [
        "src/addon.cc",
        "src/common.cc",
        "src/icrc.cc",
        "src/poller.cc",
        "src/socket_base.cc",
        "src/packet_socket.cc",
        "src/xdp_prog.cc",
        "src/xsk_socket.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "cflags_cc": ["-std=gnu++17", "-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
      "libraries": ["<!@(pkg-config --libs libxdp libbpf)", "-lelf", "-lz"],
      "conditions": [
        ["have_isal==1", {
          "defines": ["ROCE_HAVE_ISAL"],
          "libraries": ["-lisal"]
        }]
      ]
    }
  ]
}
