# Builds llama-server and only what it links: llama.cpp's sdist builds every tool (the CLI, quantize, perplexity,
# the benches, TTS, the multimodal CLIs, the unified app), which geomon never runs. Passed to llama.cpp's CMake
# with -DCMAKE_PROJECT_INCLUDE (deploy/build-llama-server.sh): after the configure step, every target but
# llama-server leaves the default build; the libraries it links are still built as its dependencies.
# The code a request passes through once (the HTTP server, JSON, chat templates, argument parsing, the
# multimodal library) is compiled at -O1: about a fifth less compile time; the kernels (ggml*) and the model
# code (llama) keep -O3, and the served rate did not fall (docs/performance.md, `make bench-cpu ARGS=--engines`).
if(NOT COMMAND geomon_only_llama_server)
  function(geomon_targets_under dir out)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
      geomon_targets_under("${sub}" below)
      list(APPEND targets ${below})
    endforeach()
    set(${out} ${targets} PARENT_SCOPE)
  endfunction()

  function(geomon_only_llama_server)
    geomon_targets_under("${CMAKE_SOURCE_DIR}" targets)
    if(NOT "llama-server" IN_LIST targets)
      message(FATAL_ERROR "geomon: llama.cpp defines no llama-server target (deploy/llama-server-only.cmake)")
    endif()
    foreach(target IN LISTS targets)
      if(NOT target STREQUAL "llama-server")
        set_property(TARGET ${target} PROPERTY EXCLUDE_FROM_ALL TRUE)
      endif()
      get_property(kind TARGET ${target} PROPERTY TYPE)
      if(NOT target MATCHES "^(ggml.*|llama)$" AND NOT kind MATCHES "^(INTERFACE_LIBRARY|UTILITY)$")
        target_compile_options(${target} PRIVATE -O1)  # after CMAKE_CXX_FLAGS_RELEASE's -O3: the last one wins
      endif()
    endforeach()
  endfunction()

  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL geomon_only_llama_server)
endif()
