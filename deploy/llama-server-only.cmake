# Builds llama-server, llama-quantize and only what they link: llama.cpp's sdist builds every tool (the CLI,
# perplexity, the benches, TTS, the multimodal CLIs, the unified app), which geomon never runs. llama-quantize
# re-quantizes a bundled model's weights for a serving-change release (geomon/engine/quantize.py): one more source
# file over the libraries the server already links. Passed to llama.cpp's CMake
# with -DCMAKE_PROJECT_INCLUDE (deploy/build-llama-server.sh): after the configure step, every target but
# the two tools leaves the default build; the libraries they link are still built as their dependencies.
# How each part is compiled, by how often geomon runs it (docs/performance.md, `make bench-cpu ARGS=--engines`: the
# served rate did not fall):
# - the kernels (ggml*) and the model code (llama): the release -O3, untouched;
# - the code a request passes through once (the HTTP server, JSON, chat templates, argument parsing): -O1, and
#   compiled as unity sources (six files per translation unit: the headers parsed once per six);
# - the multimodal library (mtmd), which llama-server links but runs only with a vision projector (--mmproj), which
#   geomon never passes: -O0, as unity sources (sixteen files per unit; its public helpers each alone).
# Together a fifth less compile time than -O1 alone (255 → 202 s on two cores); the multimodal library's unity
# sources a further 186 → 162 s (`ninja -j2 llama-server`, docs/performance.md).
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
    set(tools llama-server llama-quantize)
    foreach(tool IN LISTS tools)
      if(NOT tool IN_LIST targets)
        message(FATAL_ERROR "geomon: llama.cpp defines no ${tool} target (deploy/llama-server-only.cmake)")
      endif()
    endforeach()
    foreach(target IN LISTS targets)
      if(NOT target IN_LIST tools)
        set_property(TARGET ${target} PROPERTY EXCLUDE_FROM_ALL TRUE)
      endif()
      get_property(kind TARGET ${target} PROPERTY TYPE)
      if(target MATCHES "^(ggml.*|llama)$" OR kind MATCHES "^(INTERFACE_LIBRARY|UTILITY)$")
        continue()
      endif()
      if(target STREQUAL "mtmd")
        target_compile_options(${target} PRIVATE -O0)  # after CMAKE_CXX_FLAGS_RELEASE's -O3: the last one wins
        # Its ~50 model files are short and parse the same headers: parsing is most of their compile at -O0.
        set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
        # Its public helpers refuse to compile beside the internal headers (an #error): each stays its own unit.
        get_property(sources TARGET ${target} PROPERTY SOURCES)
        list(FILTER sources INCLUDE REGEX "mtmd-helper[^/]*\\.cpp$")
        get_property(dir TARGET ${target} PROPERTY SOURCE_DIR)
        foreach(source IN LISTS sources)
          cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${dir}")
          set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
        endforeach()
        continue()
      endif()
      target_compile_options(${target} PRIVATE -O1)
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
      # common/json.cpp specialises templates another file of its unit would already have instantiated.
      get_property(dir TARGET ${target} PROPERTY SOURCE_DIR)
      set_source_files_properties("${dir}/json.cpp" TARGET_DIRECTORY ${target} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endforeach()
  endfunction()

  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL geomon_only_llama_server)
endif()
