"""Graph store (reified triples, one body of Cypher, a dialect per engine) and the pgvector store."""
