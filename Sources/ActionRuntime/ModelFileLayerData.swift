import PoseCore

/// Layer data in the data section (docs/format.md 3.2, format 1.8): lists of numbers of a
/// layer's description (`standardize`'s statistics, `graphConv`'s adjacency) that a file keeps
/// as tensors at the head of its tensor table instead of as JSON numbers in its header. The
/// writer puts such a layer in its header form (`LayerKind.headerForm`); the reader checks the
/// tensors as it checks weights and puts the values back (`LayerKind.described(byData:)`)
/// before it builds the network, so the rest of the program sees the description a file
/// before 1.8 gave.
extension ModelFile {
    /// The layers as a header of this version holds them, and their data tensors in table order
    /// (layer order), named as the network names tensors.
    static func headerForm(_ layers: [LayerSpec]) throws -> (layers: [LayerSpec], data: [(tensor: ParameterShape, values: [Float])]) {
        var data: [(tensor: ParameterShape, values: [Float])] = []
        func headerForm<K: LayerKind>(_ kind: K, prefix: String) -> LayerSpec? {
            guard let (form, values) = kind.headerForm() else { return nil }
            data += values.map { (ParameterShape(prefix + $0.tensor.name, $0.tensor.shape, layout: $0.tensor.layout), $0.values) }
            return LayerSpec(form)
        }
        let out = try layers.enumerated().map { i, spec in
            try spec.mappingLayers(prefix: "layers.\(i).") { spec, prefix in headerForm(spec.kind, prefix: prefix) ?? spec }
        }
        return (out, data)
    }

    /// The layers of a checked header described by their data tensors, `tensors` (the head of the
    /// table, checked against the layers by `validate`); `values` reads one.
    static func described(
        _ layers: [LayerSpec], byData tensors: ArraySlice<ModelHeader.Tensor>, values: (ModelHeader.Tensor) throws -> [Float]
    ) throws -> [LayerSpec] {
        guard !tensors.isEmpty else { return layers }
        func described<K: LayerKind>(_ kind: K, prefix: String) throws -> LayerSpec? {
            var own: [String: [Float]] = [:]
            for t in tensors where t.name.hasPrefix(prefix) {
                let field = t.name.dropFirst(prefix.count)
                if !field.contains(".") { own[String(field)] = try values(t) }
            }
            return own.isEmpty ? nil : kind.described(byData: own).map(LayerSpec.init)
        }
        return try layers.enumerated().map { i, spec in
            try spec.mappingLayers(prefix: "layers.\(i).") { spec, prefix in try described(spec.kind, prefix: prefix) ?? spec }
        }
    }

    /// The float32 values of tensor `t` of a data section.
    static func floats(_ t: ModelHeader.Tensor, in data: UnsafeRawBufferPointer) -> [Float] {
        (0..<(t.length / 4)).map { i in
            Float(bitPattern: UInt32(littleEndian: data.loadUnaligned(fromByteOffset: t.offset + 4 * i, as: UInt32.self)))
        }
    }
}

extension LayerSpec {
    /// This layer with `transform` applied to every layer nested in it (the lists of `residual`,
    /// `averageProbabilities`, ...) and then to itself, each with its tensor-name prefix: `prefix`
    /// for this one, `<prefix><key>.<j>.` for layer j of its list `key`, `<prefix><key>.<m>.<j>.`
    /// in the m-th of its lists `key`, as the network names their tensors.
    func mappingLayers(prefix: String, _ transform: (LayerSpec, String) throws -> LayerSpec) throws -> LayerSpec {
        var fields = kind.fields, nested = false
        for k in fields.indices {
            let key = fields[k].key
            switch fields[k].value {
            case .layers(let list):
                fields[k].value = .layers(try list.enumerated().map { j, s in try s.mappingLayers(prefix: "\(prefix)\(key).\(j).", transform) })
                nested = true
            case .layerLists(let lists):
                fields[k].value = .layerLists(
                    try lists.enumerated().map { m, list in
                        try list.enumerated().map { j, s in try s.mappingLayers(prefix: "\(prefix)\(key).\(m).\(j).", transform) }
                    })
                nested = true
            default:
                break
            }
        }
        let spec = nested ? try LayerSpec.decode(type: typeName, fields: FieldValues(fields: fields)) ?? self : self
        return try transform(spec, prefix)
    }
}

/// `LayerFieldReader` over a kind's own `fields`: rebuilds a kind with changed fields.
struct FieldValues: LayerFieldReader {
    let fields: [(key: String, value: LayerField)]

    struct Missing: Error, CustomStringConvertible {
        var key: String
        var description: String { "no field '\(key)' of the expected type" }
    }

    func value(_ key: String) -> LayerField? { fields.first { $0.key == key }?.value }
    func contains(_ key: String) -> Bool { value(key) != nil }
    func int(_ key: String) throws -> Int {
        guard case .int(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
    func float(_ key: String) throws -> Float {
        guard case .float(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
    func ints(_ key: String) throws -> [Int] {
        guard case .ints(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
    func floats(_ key: String) throws -> [Float] {
        guard case .floats(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
    func layers(_ key: String) throws -> [LayerSpec] {
        guard case .layers(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
    func layerLists(_ key: String) throws -> [[LayerSpec]] {
        guard case .layerLists(let v) = value(key) else { throw Missing(key: key) }
        return v
    }
}
